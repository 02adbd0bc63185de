/**
 * A failed end-to-end test prints what the dev servers of its file last wrote: a cause on the
 * server's side (an error it logged, a start-up step that went wrong) is otherwise lost with the
 * process, and the test's own message shows only what the client saw.
 */
import { beforeEach } from "vitest";
import { devServersStarted } from "./harness";

const SHOWN_SERVERS = 3;
const SHOWN_CHARS = 3000;

beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    for (const server of devServersStarted().slice(-SHOWN_SERVERS)) {
      console.error(
        `── the dev server on ${server.url}, its last output ──\n${server.logs().slice(-SHOWN_CHARS)}`,
      );
    }
  });
});
