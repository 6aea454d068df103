// SPDX-License-Identifier: MIT
// Load a Chrome trace with Chrome DevTools' own trace engine (the model
// behind its Performance panel, published on npm as
// @paulirish/trace_engine) and print, as JSON, what it made of each
// thread: the slices it built, their names, nesting and durations.
//
// Usage: node chrome-trace-import.mjs ENGINE_DIR TRACE.json OUT.json
//   ENGINE_DIR: the installed package (tests/build/node_modules/
//   @paulirish/trace_engine); OUT.json gets the summary (stdout is the
//   engine's, which logs what it finds wrong: passed on, for the test).

import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const [engineDir, tracePath, outPath] = process.argv.slice(2);
const engine = await import(
    pathToFileURL(path.join(engineDir, 'analyze-trace.mjs')).href);
const {parsedTrace} = await engine.analyzeTrace(tracePath);
const data = parsedTrace.data;
const threads = [];

for (const [pid, proc] of data.Renderer.processes) {
  for (const [tid, thread] of proc.threads) {
    const names = {};
    let nodes = 0, maxDepth = 0, rootDur = 0;
    const walk = (node, depth) => {
      nodes++;
      maxDepth = Math.max(maxDepth, depth);
      names[node.entry.name] = (names[node.entry.name] || 0) + 1;
      for (const child of node.children) walk(child, depth + 1);
    };
    for (const root of thread.tree.roots) {
      rootDur += root.entry.dur;
      walk(root, 1);
    }
    threads.push({pid, tid, name: thread.name ?? null, entries:
                  thread.entries.length, nodes, roots: thread.tree.roots.size,
                  maxDepth, rootDur, names});
  }
}
fs.writeFileSync(outPath, JSON.stringify({
  generic: data.Meta.traceIsGeneric,
  processNames: [...data.Meta.processNames.values()].map(
      e => [e.pid, e.args.name]),
  threads,
  // each flow (an arrow) as the names of the events it joins, in order
  flows: (data.Flows?.flows ?? []).map(f => f.map(e => e.name)),
}));
