// An LSP client that is not pygls, for benchmarks/server_latency.py: drives
// `dtype-lint server` over stdio with vscode-languageserver-protocol (VS Code's own
// protocol library), edits each file as an editor does, and prints one JSON line of
// timings per file.
//
//   node lsp_client.cjs PLAN.json    (the plan: see server_latency.py's `plan`)
//
// Each change is sent as the server asks (incremental or whole-document sync). Timed:
// from each didChange to the diagnostics of its version, and a hover sent once the
// server's pause after typing has passed, while the change is being linted.
"use strict";

const { spawn } = require("child_process");
const fs = require("fs");
const {
  createProtocolConnection, StreamMessageReader, StreamMessageWriter, TextDocumentSyncKind,
} = require("vscode-languageserver-protocol/node");

const plan = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const now = () => Number(process.hrtime.bigint()) / 1e6; // ms
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const server = spawn(plan.command[0], plan.command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  const connection = createProtocolConnection(new StreamMessageReader(server.stdout), new StreamMessageWriter(server.stdin));
  const arrived = new Map(); // "uri version" -> time
  const waiting = new Map();
  connection.onNotification("textDocument/publishDiagnostics", (params) => {
    const key = `${params.uri} ${params.version}`;
    arrived.set(key, { at: now(), diagnostics: params.diagnostics });
    if (waiting.has(key)) waiting.get(key)();
  });
  connection.onNotification("window/logMessage", () => {});
  connection.listen();
  const until = (uri, version) => {
    const key = `${uri} ${version}`;
    return arrived.has(key) ? Promise.resolve(arrived.get(key))
      : new Promise((resolve) => waiting.set(key, () => resolve(arrived.get(key))));
  };

  const init = await connection.sendRequest("initialize", {
    processId: process.pid, rootUri: null,
    capabilities: { textDocument: { synchronization: { didSave: true }, hover: {} } },
  });
  await connection.sendNotification("initialized", {});
  const sync = init.capabilities.textDocumentSync;
  const incremental = (typeof sync === "number" ? sync : sync.change) === TextDocumentSyncKind.Incremental;

  for (const file of plan.files) {
    const { uri, edits } = file;
    let text = file.text;
    let version = 0;
    arrived.clear(); // the same file may have been open before, with the same versions
    const sent = now();
    await connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri, languageId: "python", version, text },
    });
    const opened = await until(uri, version);
    const result = { uri, incremental, open_ms: opened.at - sent, findings: opened.diagnostics.length,
                     change_ms: [], hover_ms: [], hover_during_lint: 0 };
    const hoverAt = opened.diagnostics.length ? opened.diagnostics[0].range.start : { line: 0, character: 0 };
    for (const edit of edits) {
      version += 1;
      // The edit: new text inserted at the start of a line (edit.line, 0-based).
      const lines = text.split("\n");
      const next = [...lines.slice(0, edit.line), edit.insert, ...lines.slice(edit.line)].join("\n");
      const change = incremental
        ? { range: { start: { line: edit.line, character: 0 }, end: { line: edit.line, character: 0 } },
            text: edit.insert + "\n" }
        : { text: next };
      text = next;
      const start = now();
      await connection.sendNotification("textDocument/didChange", {
        textDocument: { uri, version }, contentChanges: [change],
      });
      const diagnostics = until(uri, version);
      await sleep(plan.debounce_ms + plan.hover_after_ms);
      const running = !arrived.has(`${uri} ${version}`);
      const asked = now();
      await connection.sendRequest("textDocument/hover", { textDocument: { uri }, position: hoverAt });
      if (running) {
        result.hover_ms.push(now() - asked);
        result.hover_during_lint += !arrived.has(`${uri} ${version}`) ? 1 : 0;
      }
      const got = await diagnostics;
      result.change_ms.push(got.at - start - plan.debounce_ms);
      result.findings = got.diagnostics.length;
    }
    await connection.sendNotification("textDocument/didClose", { textDocument: { uri } });
    process.stdout.write(JSON.stringify(result) + "\n");
  }
  await connection.sendRequest("shutdown");
  await connection.sendNotification("exit");
  connection.dispose();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
