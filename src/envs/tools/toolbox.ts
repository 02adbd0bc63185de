/** The toolbox now lives in the env SDK (`atropos-edge`); kept so existing imports still resolve. */
export { allowedTools, type Tool, Toolbox, type ToolResult } from "../../sdk/env";
export { standardTools } from "./standard-tools";
