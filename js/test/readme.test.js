// Every fenced block of README.md is run or checked by a test, and this
// file says which (a new block no runner claims fails here):
// - the front door's loop (the first ```js block) is js/examples/loop.mjs,
//   byte for byte, and runs here on the offline model;
// - "Use from JavaScript" runs here as written on Node, its import of
//   "engram" pointed at the package (js/node.js) and `fetch` answering like
//   an OpenAI-compatible server (engram's tasks by the offline model,
//   embeddings by the offline embedder, the chat reply canned);
// - the Rust quick start is a doctest (src/lib.rs includes README.md) and
//   runs inside tokio::spawn (scripts/test, readme_tokio);
// - the Python block runs from the installed wheel (scripts/test-component,
//   python_package);
// - the wasmtime fragment is lines of hosts/rust/README.md's snippet, which
//   the Rust host's doctests compile and run: checked here;
// - ```sh blocks name scripts that exist and are executable: checked here.
// Run by scripts/test-js.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { offlineModel } from "engram";

const ROOT = new URL("../../", import.meta.url);
const read = (path) => readFileSync(new URL(path, ROOT), "utf8");

/** The fenced blocks of a markdown text: the `## ` section (`""` before the first), info string, text, line. */
export function fencedBlocks(markdown) {
  const out = [];
  let section = "";
  let open = null;
  markdown.split("\n").forEach((line, i) => {
    if (open) {
      if (line.startsWith("```")) {
        out.push(open);
        open = null;
      } else open.text += `${line}\n`;
    } else if (line.startsWith("```")) open = { section, info: line.slice(3).trim(), text: "", line: i + 1 };
    else if (line.startsWith("## ")) section = line.slice(3).trim();
  });
  assert.equal(open, null, "every fence is closed");
  return out;
}

const README = fencedBlocks(read("README.md"));
const only = (section, info) => {
  const found = README.filter((b) => b.section === section && b.info === info);
  assert.equal(found.length, 1, `README.md has one \`\`\`${info} block under "${section || "(top)"}"`);
  return found[0].text;
};

/** Which test runs or checks each kind of block ([section, info] -> runner). */
const RUNNERS = [
  ["", "js", "the loop: js/examples/loop.mjs, run here"],
  ["Use from JavaScript", "js", "run here against a fake OpenAI-compatible server"],
  ["Quick start (Rust)", "rust", "doctest in src/lib.rs; scripts/test readme_tokio"],
  ["Use from Python", "python", "scripts/test-component python_package"],
  ["Use from Rust (wasmtime)", "rust,ignore", "lines of hosts/rust/README.md's doctest, checked here"],
  [null, "sh", "commands checked here"],
];

/** The runner that claims `block`, or undefined. */
const runnerOf = (block) =>
  RUNNERS.find(([section, info]) => info === block.info && (section === null || section === block.section))?.[2];

/** The commands of a ```sh block that a check here does not know. */
function unknownCommands(text) {
  const unknown = [];
  const version = /^version = "([^"]+)"/m.exec(read("hosts/python/pyproject.toml"))[1];
  const pythonName = /^name = "([^"]+)"/m.exec(read("hosts/python/pyproject.toml"))[1];
  const crateName = /^name = "([^"]+)"/m.exec(read("hosts/rust/Cargo.toml"))[1];
  const npmName = JSON.parse(read("js/package.json")).name;
  for (const raw of text.split("\n")) {
    const line = raw.replace(/\s#.*$/, "").trim();
    if (!line) continue;
    for (const command of line.split("&&").map((c) => c.trim())) {
      const [word, ...args] = command.split(/\s+/);
      if (word.startsWith("scripts/")) {
        try {
          accessSync(new URL(word, ROOT), constants.X_OK);
        } catch {
          unknown.push(`${command}: ${word} is not an executable script`);
        }
      } else if (word === "pip" && args[0] === "install") {
        // The wheel scripts/build-python makes, or the registry's name of
        // the package (pyproject.toml's), as the Install section gives it.
        const wheel = `target/python/engram_host-${version}-py3-none-any.whl`;
        if (args[1] !== wheel && args[1] !== pythonName) {
          unknown.push(`${command}: scripts/build-python makes ${wheel}; the package is ${pythonName}`);
        }
      } else if (word === "npm" && args[0] === "install" && args.length === 2) {
        if (args[1] !== npmName) unknown.push(`${command}: the npm package is ${npmName} (js/package.json)`);
      } else if (word === "cargo" && args[0] === "add") {
        // `cargo add NAME [--features F]`: the host crate's name and one of its features.
        const features = args.indexOf("--features") >= 0 ? args[args.indexOf("--features") + 1] : null;
        if (args[1] !== crateName) unknown.push(`${command}: the host crate is ${crateName} (hosts/rust/Cargo.toml)`);
        else if (features && !new RegExp(`^${features} = `, "m").test(read("hosts/rust/Cargo.toml"))) {
          unknown.push(`${command}: hosts/rust/Cargo.toml has no feature ${features}`);
        }
      } else unknown.push(`${command}: no check knows this command`);
    }
  }
  return unknown;
}

/** The first ```js block after the "## Use from JavaScript" heading. */
const readmeSnippet = () => only("Use from JavaScript", "js");

/** A fetch that answers like an OpenAI-compatible server. */
function fakeServer() {
  const offline = offlineModel();
  const seen = { tasks: 0, embeddings: 0, chats: 0 };
  const json = (body) => new Response(JSON.stringify(body), { headers: { "content-type": "application/json" } });
  const fetch = async (url, init) => {
    const body = JSON.parse(init.body);
    if (String(url).endsWith("/embeddings")) {
      seen.embeddings++;
      const vectors = await offline.embed(body.input);
      return json({ data: vectors.map((embedding, index) => ({ embedding, index })) });
    }
    const schema = body.response_format?.json_schema;
    if (schema) {
      seen.tasks++;
      const task = schema.name.replace(/^engram_/, "");
      const [system, user] = body.messages;
      const content = await offline.complete({ task, system: system.content, content: user.content, schema: JSON.stringify(schema.schema) });
      return json({ choices: [{ message: { role: "assistant", content } }] });
    }
    seen.chats++;
    return json({ choices: [{ message: { role: "assistant", content: `Reply ${seen.chats}: noted.` } }] });
  };
  return { fetch, seen };
}

test("README's front door is js/examples/loop.mjs, and the loop runs on the offline model", () => {
  const loop = only("", "js");
  assert.equal(loop, read("js/examples/loop.mjs"), "README.md's first js block is js/examples/loop.mjs");
  assert.ok(loop.split("\n").length <= 17, "the loop fits in about 15 lines");
  const out = execFileSync(process.execPath, [new URL("js/examples/loop.mjs", ROOT).pathname], { encoding: "utf8" });
  const turns = out.trim().split("\n").map((line) => /^(\d+) tokens in view; \(your LLM's reply to (\d+) messages\)$/.exec(line));
  assert.equal(turns.length, 3, `three turns: ${out}`);
  assert.ok(turns.every(Boolean), `each turn prints its view: ${out}`);
  const [tokens, seen] = [turns.map((m) => Number(m[1])), turns.map((m) => Number(m[2]))];
  // Each view holds the turns before it: the LLM saw 1, then 3, then 5 messages.
  assert.deepEqual(seen, [1, 3, 5], `the rendered request grows by a turn: ${out}`);
  assert.ok(tokens[0] < tokens[1] && tokens[1] < tokens[2], `the view grows: ${out}`);
});

test("the README's JavaScript snippet runs as written on Node: a chat loop whose prompts engram builds", async () => {
  const dir = mkdtempSync(join(tmpdir(), "engram-readme-"));
  const realFetch = globalThis.fetch;
  const cwd = process.cwd();
  try {
    const node = pathToFileURL(new URL("../node.js", import.meta.url).pathname).href;
    const snippet = readmeSnippet().replaceAll(`from "engram"`, `from ${JSON.stringify(node)}`);
    assert.ok(snippet.includes(node), "the snippet imports from engram");
    writeFileSync(join(dir, "snippet.mjs"), snippet);
    const server = fakeServer();
    globalThis.fetch = server.fetch;
    process.env.OPENAI_API_KEY = "sk-test";
    process.chdir(dir);
    const { chat } = await import(pathToFileURL(join(dir, "snippet.mjs")).href);
    for (const text of [
      "I'm Ana. Let's plan the Lisbon offsite for fifteen people.",
      "The budget is about 20,000 euros and we fly on May 12.",
      "Where did we say the offsite is?",
    ]) {
      assert.match(await chat(text), /^Reply \d+: noted\.$/);
    }
    assert.equal(server.seen.chats, 3, "one chat completion per turn");
    assert.ok(server.seen.tasks > 0, `engram asked its tasks: ${JSON.stringify(server.seen)}`);
    assert.ok(existsSync(join(dir, "chat.db")), "the memory is in the SQLite file the snippet names");
  } finally {
    process.chdir(cwd);
    globalThis.fetch = realFetch;
    delete process.env.OPENAI_API_KEY;
    rmSync(dir, { recursive: true, force: true });
  }
});

test("every README block is claimed by a runner, and each claimed runner is there", () => {
  const unclaimed = README.filter((b) => !runnerOf(b)).map((b) => `README.md:${b.line} \`\`\`${b.info} under "${b.section}"`);
  assert.deepEqual(unclaimed, [], "a README block no test runs (add it to RUNNERS with its test)");
  assert.match(read("src/lib.rs"), /#\[doc = include_str!\("\.\.\/README\.md"\)\]/, "src/lib.rs makes README's Rust block a doctest");
  assert.match(read("scripts/test"), /readme_tokio/, "scripts/test runs the quick start in tokio");
  assert.match(read("scripts/test-component"), /readme_python_snippet >/, "scripts/test-component runs README's Python block");
  assert.match(read("hosts/rust/src/lib.rs"), /include_str!\("\.\.\/README\.md"\)/, "the Rust host's README is a doctest");
});

test("the README's wasmtime fragment is lines of the Rust host's tested snippet, in order", () => {
  const fragment = only("Use from Rust (wasmtime)", "rust,ignore").split("\n").filter((l) => l.trim());
  const tested = fencedBlocks(read("hosts/rust/README.md")).find((b) => b.info === "rust").text.split("\n");
  let at = 0;
  for (const line of fragment) {
    const found = tested.indexOf(line, at);
    assert.ok(found >= 0, `hosts/rust/README.md's snippet has, after line ${at}: ${line}`);
    at = found + 1;
  }
});

test("the README's shell blocks name scripts that exist", () => {
  const blocks = README.filter((b) => b.info === "sh");
  assert.ok(blocks.length >= 2, "the setup commands are there");
  assert.ok(blocks[0].section === "" && /^scripts\/demo\b/m.test(blocks[0].text) && /^scripts\/test\b/m.test(blocks[0].text), "the first screen has scripts/demo and scripts/test");
  assert.deepEqual(blocks.flatMap((b) => unknownCommands(b.text)), []);
  assert.deepEqual(unknownCommands("scripts/nothing-here\n"), ["scripts/nothing-here: scripts/nothing-here is not an executable script"], "probe: a missing script is caught");
  assert.equal(unknownCommands("make all\n").length, 1, "probe: an unknown command is caught");
});
