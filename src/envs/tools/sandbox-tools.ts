/** The sandbox tools now live in the env SDK (`atropos-edge`); kept so existing imports still resolve. */
export { fileOpsTool, jsExecTool, pythonExecTool, type SandboxToolOptions } from "../../sdk/env";
