/* SPDX-License-Identifier: MIT */
/*
 * A self-contained HTML page: the profile as JSON inside the page, and a
 * viewer that draws it (an icicle, root on top, or a flame graph; zoom
 * by a click, search, a thread or all of them, a table of functions by
 * own and total samples).  Nothing is fetched: it opens from disk, on a
 * machine without spyc or a network.
 */
#include "out/output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "gpu/gpuprof.h"
#include "profile/profile-read.h"
#include "profile/source.h"
#include "py/framename.h"
#include "util.h"

/*
 * Most bytes of one source file, and of all of them, put in a page: the
 * files are taken busiest first (by the samples with a frame in them).
 */
#define SOURCES_MAX (8u << 20)

/*
 * The page around the data.  The viewer finds the data in the element
 * spyc-data; window.spyc lets a test drive it as a user would.
 */
static const char page_head[] =
    "<!DOCTYPE html>\n"
    "<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
    "<meta name=\"generator\" content=\"spyc\">\n"
    "<title>spyc profile</title>\n"
    "<style>\n"
    "body { font: 13px sans-serif; margin: 0; color: #222; }\n"
    "#bar { position: sticky; top: 0; z-index: 2; background: #eee;\n"
    "  padding: 6px 8px; display: flex; flex-wrap: wrap; gap: 8px;\n"
    "  align-items: center; border-bottom: 1px solid #ccc; }\n"
    "#info, #matched { color: #555; }\n"
    "#graph { position: relative; margin: 6px 8px; }\n"
    ".n { position: absolute; height: 17px; line-height: 17px;\n"
    "  box-sizing: border-box; border: 1px solid #fff; padding: 0 3px;\n"
    "  overflow: hidden; white-space: nowrap; text-overflow: ellipsis;\n"
    "  font: 11px monospace; cursor: pointer; }\n"
    ".n.match { background: #d6f !important; }\n"
    ".n.above { opacity: 0.6; }\n"
    "#source { margin: 8px; }\n"
    "#source pre { margin: 0; font: 12px monospace; }\n"
    "#source .l { display: block; white-space: pre; }\n"
    "#source .no { display: inline-block; width: 5em; color: #888; "
    "text-align: right; padding-right: 1em; }\n"
    "#source .hits { display: inline-block; width: 6em; color: #555; "
    "text-align: right; padding-right: 1em; }\n"
    "#graph .n.chance { border-style: dashed; border-color: #999; }\n"
    "#gpu { margin: 6px 8px; }\n"
    "#gpu .gr { display: flex; align-items: center; height: 16px; }\n"
    "#gpu .gl { width: 22em; flex: none; font: 11px monospace; "
    "color: #555;\n"
    "  overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }\n"
    "#gpu canvas { flex: 1; min-width: 0; height: 14px; "
    "background: #f2f2f2; cursor: pointer; }\n"
    "#gpu pre { font: 12px monospace; }\n"
    "#table { border-collapse: collapse; margin: 8px; }\n"
    "#table th { cursor: pointer; text-align: left; background: #eee; }\n"
    "#table th, #table td { padding: 2px 10px; }\n"
    "#table td.num { text-align: right; font-variant-numeric: "
    "tabular-nums; }\n"
    "#table tbody tr { cursor: pointer; }\n"
    "#table tbody tr:hover { background: #f4f0ff; }\n"
    "</style></head><body>\n"
    "<div id=\"bar\"><b id=\"title\"></b>\n"
    "<select id=\"profile\" title=\"Profile\" hidden></select>\n"
    "<select id=\"thread\" title=\"Thread\"></select>\n"
    "<button id=\"reset\">Reset zoom</button>\n"
    "<button id=\"mode\">Flame graph</button>\n"
    "<input id=\"search\" size=\"30\" placeholder=\"Search (regular "
    "expression)\">\n"
    "<span id=\"matched\"></span><span id=\"info\"></span></div>\n"
    "<div id=\"gpu\" hidden><div id=\"gpu-rows\"></div>\n"
    "<details><summary id=\"gpu-span\"></summary>"
    "<pre id=\"gpu-summary\"></pre></details></div>\n"
    "<div id=\"graph\"></div>\n"
    "<div id=\"source\"><b id=\"source-title\"></b>"
    "<pre id=\"source-lines\"></pre></div>\n"
    "<table id=\"table\"><thead><tr><th data-k=\"name\">Function</th>"
    "<th data-k=\"file\">File</th><th data-k=\"self\">Own</th>"
    "<th data-k=\"self\">Own %</th><th data-k=\"total\">Total</th>"
    "<th data-k=\"total\">Total %</th></tr></thead><tbody></tbody>"
    "</table>\n"
    "<script id=\"spyc-data\" type=\"application/json\">";

static const char page_tail[] =
    "</script>\n"
    "<script>\n"
    "(function () {\n"
    "'use strict';\n"
    "var data = JSON.parse(document.getElementById('spyc-data')"
    ".textContent);\n"
    "var ROW = 18, MIN_PX = 0.5, TABLE_ROWS = 300;\n"
    "var pick = 'a', root = null, view = null, icicle = true, base = null;\n"
    "var fullChange = 5;\n"
    "var query = null, sortKey = 'self', sortDesc = true, gpu = false;\n"
    "var idle = false;\n"
    "var $ = function (id) { return document.getElementById(id); };\n"
    "function fkey(f) { return f[0] + '\\u0000' + f[1]; }\n"
    "function text(n) { return n.file ? n.name + ' (' + n.file + ')' : "
    "n.name; }\n"
    "function pct(v, of) { return of ? (100 * v / of).toFixed(1) + '%' : "
    "'0%'; }\n"
    "function stacks() {\n"
    "  if (gpu) return idle ? data.gpu.idle.stacks : data.gpu.stacks;\n"
    "  if (data.diff) return data.stacks.filter(function (s) {\n"
    "    return s[0] !== 0; });\n"
    "  return data.stacks.filter(function (s) {\n"
    "    return pick === 'a' || (pick.charAt(0) === 't' ? s[0] :\n"
    "      data.thread_process[s[0]]) === +pick.slice(1); });\n"
    "}\n"
    /* A weight: samples, or with the GPU profile nanoseconds. */
    "function amount(v) {\n"
    "  return gpu ? (v / 1e6).toFixed(3) + ' ms' : String(v);\n"
    "}\n"
    /* Functions merged per path; each node keeps its lines' samples. */
    "function build(list) {\n"
    "  var r = {name: 'all', file: '', key: null, n: 0, kids: new Map(),\n"
    "           parent: null, depth: 0, lines: {}};\n"
    "  list.forEach(function (s) {\n"
    "    var node = r;\n"
    "    r.n += s[1];\n"
    "    s[2].forEach(function (id) {\n"
    "      var f = data.frames[id], k = fkey(f), c = node.kids.get(k);\n"
    "      if (!c) {\n"
    "        c = {name: f[0], file: f[1], key: k, n: 0, kids: new Map(),\n"
    "             parent: node, depth: node.depth + 1, lines: {}};\n"
    "        node.kids.set(k, c);\n"
    "      }\n"
    "      c.n += s[1];\n"
    "      c.lines[f[2]] = (c.lines[f[2]] || 0) + s[1];\n"
    "      node = c;\n"
    "    });\n"
    "  });\n"
    "  return r;\n"
    "}\n"
    /* spyc diff: the change of n's share from BASE to NEW, in points,
     * and its sampling error (95%). */
    "function change(n) {\n"
    "  var now = root.n ? n.n / root.n : 0;\n"
    "  var was = n.base && base.n ? n.base.n / base.n : 0;\n"
    "  return 100 * (now - was);\n"
    "}\n"
    "function changeError(n) {\n"
    "  var p1 = n.base && base.n ? n.base.n / base.n : 0;\n"
    "  var p2 = root.n ? n.n / root.n : 0;\n"
    "  return 196 * Math.sqrt((base.n ? p1 * (1 - p1) / base.n : 0) +\n"
    "                         (root.n ? p2 * (1 - p2) / root.n : 0));\n"
    "}\n"
    "function colour(n) {\n"
    "  if (data.diff && !gpu) {\n"
    "    var c = change(n), t = Math.min(1, Math.abs(c) / fullChange);\n"
    "    var pale = Math.round(250 - 200 * t);\n"
    "    return c >= 0 ? 'rgb(250,' + pale + ',' + pale + ')' :\n"
    "                    'rgb(' + pale + ',' + pale + ',250)';\n"
    "  }\n"
    "  if (!n.key) return '#ccc';\n"
    "  if (n.name.charAt(0) === '<' && !n.file) return '#aab';\n"
    "  var h = 0, i;\n"
    "  for (i = 0; i < n.name.length; i++)\n"
    "    h = (h * 31 + n.name.charCodeAt(i)) >>> 0;\n"
    "  return 'hsl(' + (h % 50) + ',' + (60 + h % 30) + '%,' +\n"
    "         (55 + (h >> 8) % 15) + '%)';\n"
    "}\n"
    "function tooltip(n) {\n"
    "  var lines = Object.keys(n.lines).filter(function (l) {\n"
    "    return +l > 0; }).sort(function (a, b) {\n"
    "    return n.lines[b] - n.lines[a]; }).slice(0, 5);\n"
    "  return text(n) + '\\n' + amount(n.n) + (gpu ? '' : ' samples') +\n"
    "    ' (' + pct(n.n, root.n) +\n"
    "    ' of all, ' + pct(n.n, view.n) + ' of the view)' +\n"
    "    lines.map(function (l) {\n"
    "      return '\\n  line ' + l + ': ' + amount(n.lines[l]); })"
    ".join('') + (data.diff ? '\\nBASE ' + (n.base && base.n ?\n"
    "      100 * n.base.n / base.n : 0).toFixed(1) + '%, ' +\n"
    "      (change(n) >= 0 ? '+' : '') + change(n).toFixed(1) +\n"
    "      ' points (\\u00b1' + changeError(n).toFixed(1) + ')' : '');\n"
    "}\n"
    "function matches(n) { return query && n.key && "
    "query.test(text(n)); }\n"
    /* Boxes: the view's callers across the width, the view's callees
     * within it; those under MIN_PX wide are left out. */
    "function render() {\n"
    "  var g = $('graph'), width = g.clientWidth, boxes = [], deepest = 0;\n"
    "  for (var a = view; a; a = a.parent)\n"
    "    boxes.push({node: a, x: 0, w: width, above: a !== view});\n"
    "  (function walk(node, x, w) {\n"
    "    var kids = Array.from(node.kids.values()).sort(function (a, b) {\n"
    "      return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });\n"
    "    kids.forEach(function (c) {\n"
    "      var cw = w * c.n / node.n;\n"
    "      if (cw >= MIN_PX) {\n"
    "        boxes.push({node: c, x: x, w: cw});\n"
    "        walk(c, x, cw);\n"
    "      }\n"
    "      x += cw;\n"
    "    });\n"
    "  })(view, 0, width);\n"
    "  boxes.forEach(function (b) { deepest = Math.max(deepest, "
    "b.node.depth); });\n"
    "  if (data.diff) {\n"
    "    fullChange = 5;\n"
    "    boxes.forEach(function (b) {\n"
    "      fullChange = Math.max(fullChange, Math.abs(change(b.node))); "
    "});\n"
    "  }\n"
    "  g.textContent = '';\n"
    "  g.style.height = (deepest + 1) * ROW + 'px';\n"
    "  var frag = document.createDocumentFragment();\n"
    "  boxes.forEach(function (b) {\n"
    "    var d = document.createElement('div'), n = b.node;\n"
    "    d.className = 'n' + (b.above ? ' above' : '') +\n"
    "                  (matches(n) ? ' match' : '');\n"
    "    d.style.left = b.x + 'px';\n"
    "    d.style.width = b.w + 'px';\n"
    "    d.style.top = (icicle ? n.depth : deepest - n.depth) * ROW + "
    "'px';\n"
    "    d.style.background = colour(n);\n"
    "    if (b.w > 24) d.textContent = text(n);\n"
    "    d.title = tooltip(n);\n"
    "    d.spycNode = n;\n"
    "    if (data.diff) {\n"
    "      d.setAttribute('data-change', change(n).toFixed(2));\n"
    "      if (Math.abs(change(n)) <= changeError(n)) "
    "d.classList.add('chance');\n"
    "    }\n"
    "    d.addEventListener('click', function () { zoom(n); });\n"
    "    frag.appendChild(d);\n"
    "  });\n"
    "  g.appendChild(frag);\n"
    "  $('reset').disabled = view === root;\n"
    "  $('mode').textContent = icicle ? 'Flame graph' : 'Icicle';\n"
    "}\n"
    "function zoom(n) {\n"
    "  view = n;\n"
    "  render();\n"
    "  if (n.key) showSource(n.name, n.file, n.lines);\n"
    "  else showSource(null);\n"
    "}\n"
    /* A function's lines around those sampled, each with its samples
     * and a heat to match; the text as the page captured it. */
    "function showSource(name, file, lines) {\n"
    "  var pre = $('source-lines'), title = $('source-title');\n"
    "  pre.textContent = '';\n"
    "  title.textContent = '';\n"
    "  if (!name) return;\n"
    "  var nums = Object.keys(lines).map(Number).filter(function (l) {\n"
    "    return l > 0; });\n"
    "  var text = data.sources && data.sources[file];\n"
    "  title.textContent = name + (file ? ' (' + file + ')' : '') +\n"
    "    (text ? '' : nums.length ? ': its source is not in the page' : "
    "'');\n"
    "  if (!nums.length) return;\n"
    "  var src = text ? text.split('\\n') : [];\n"
    "  var lo = Math.max(1, Math.min.apply(null, nums) - 5);\n"
    "  var hi = Math.max.apply(null, nums) + 5;\n"
    "  if (src.length) hi = Math.min(hi, src.length);\n"
    "  var most = Math.max.apply(null, nums.map(function (l) {\n"
    "    return lines[l]; }));\n"
    "  for (var l = lo; l <= hi; l++) {\n"
    "    var row = document.createElement('span'), h = lines[l] || 0;\n"
    "    row.className = 'l';\n"
    "    row.setAttribute('data-line', l);\n"
    "    row.setAttribute('data-n', h);\n"
    "    if (h) row.style.background = 'rgba(255,60,0,' +\n"
    "      (0.1 + 0.6 * h / most).toFixed(2) + ')';\n"
    "    var no = document.createElement('span');\n"
    "    no.className = 'no';\n"
    "    no.textContent = l;\n"
    "    var hits = document.createElement('span');\n"
    "    hits.className = 'hits';\n"
    "    hits.textContent = h ? amount(h) + ' ' + pct(h, root.n) : '';\n"
    "    row.appendChild(no);\n"
    "    row.appendChild(hits);\n"
    "    row.appendChild(document.createTextNode(src[l - 1] || ''));\n"
    "    pre.appendChild(row);\n"
    "  }\n"
    "}\n"
    /* The samples at each line of a function, over all its paths: a
     * stack counts once at a line. */
    "function functionLines(k) {\n"
    "  var lines = {};\n"
    "  stacks().forEach(function (s) {\n"
    "    var seen = {};\n"
    "    s[2].forEach(function (id) {\n"
    "      var f = data.frames[id];\n"
    "      if (fkey(f) !== k || seen[f[2]]) return;\n"
    "      seen[f[2]] = true;\n"
    "      lines[f[2]] = (lines[f[2]] || 0) + s[1];\n"
    "    });\n"
    "  });\n"
    "  return lines;\n"
    "}\n"
    /* The share of the samples in a matching function: a match under
     * another match is not counted twice. */
    "function search(s) {\n"
    "  $('search').value = s;\n"
    "  query = null;\n"
    "  if (s) {\n"
    "    try { query = new RegExp(s); }\n"
    "    catch (e) { query = new RegExp(s.replace(/[.*+?^${}()|[\\]\\\\]/g,"
    " '\\\\$&')); }\n"
    "  }\n"
    "  var hit = 0;\n"
    "  (function walk(n) {\n"
    "    if (matches(n)) { hit += n.n; return; }\n"
    "    n.kids.forEach(walk);\n"
    "  })(root);\n"
    "  $('matched').textContent = query ? 'Matched: ' + pct(hit, root.n) "
    ": '';\n"
    "  render();\n"
    "  return root.n ? hit / root.n : 0;\n"
    "}\n"
    "function functions() {\n"
    "  var by = new Map();\n"
    "  stacks().forEach(function (s) {\n"
    "    var seen = new Set();\n"
    "    s[2].forEach(function (id, i) {\n"
    "      var f = data.frames[id], k = fkey(f), e = by.get(k);\n"
    "      if (!e) by.set(k, e = {name: f[0], file: f[1], self: 0, "
    "total: 0});\n"
    "      if (!seen.has(k)) { seen.add(k); e.total += s[1]; }\n"
    "      if (i === s[2].length - 1) e.self += s[1];\n"
    "    });\n"
    "  });\n"
    "  return Array.from(by.values());\n"
    "}\n"
    "function table() {\n"
    "  var rows = functions(), body = $('table').tBodies[0];\n"
    "  rows.sort(function (a, b) {\n"
    "    var x = a[sortKey], y = b[sortKey];\n"
    "    var c = x < y ? -1 : x > y ? 1 : 0;\n"
    "    return sortDesc ? -c : c;\n"
    "  });\n"
    "  body.textContent = '';\n"
    "  rows.slice(0, TABLE_ROWS).forEach(function (r) {\n"
    "    var tr = body.insertRow();\n"
    "    [r.name, r.file, amount(r.self), pct(r.self, root.n), "
    "amount(r.total),\n"
    "     pct(r.total, root.n)].forEach(function (v, i) {\n"
    "      var td = tr.insertCell();\n"
    "      td.textContent = v;\n"
    "      if (i > 1) td.className = 'num';\n"
    "    });\n"
    "    tr.addEventListener('click', function () {\n"
    "      search('^' + (r.name + (r.file ? ' (' + r.file + ')' : ''))\n"
    "        .replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&') + '$');\n"
    "      showSource(r.name, r.file, functionLines(r.name + "
    "'\\u0000' + r.file));\n"
    "    });\n"
    "  });\n"
    "}\n"
    "function sortBy(k) {\n"
    "  if (k === sortKey) sortDesc = !sortDesc;\n"
    "  else { sortKey = k; sortDesc = k === 'self' || k === 'total'; }\n"
    "  table();\n"
    "}\n"
    /* 'a': every thread; 'tN': thread N; 'pN': process N's threads. */
    "function choose(p) {\n"
    "  pick = p;\n"
    "  $('thread').value = p;\n"
    "  root = view = build(stacks());\n"
    "  if (data.diff) {\n"
    "    base = build(data.stacks.filter(function (s) { return s[0] === 0; "
    "}));\n"
    "    (function pair(n, b) {\n"
    "      n.base = b;\n"
    "      n.kids.forEach(function (c) { pair(c, b && b.kids.get(c.key)); "
    "});\n"
    "    })(root, base);\n"
    "  }\n"
    "  showSource(null);\n"
    "  search($('search').value);\n"
    "  table();\n"
    "}\n"
    "document.title = data.title || document.title;\n"
    "$('title').textContent = data.title || 'spyc profile';\n"
    "$('info').textContent = [data.samples +\n"
    "  (data.threads.length > 1 ? ' samples of threads' : ' samples'),\n"
    "  data.duration_s ? data.duration_s.toFixed(2) + ' s' : '',\n"
    "  data.rate_hz ? data.rate_hz + ' Hz' : '',\n"
    "  data.python ? 'Python ' + data.python : ''].filter(Boolean)"
    ".join(', ');\n"
    "if (data.diff) {\n"
    "  var nb = 0, nn = 0;\n"
    "  data.stacks.forEach(function (s) { if (s[0] === 0) nb += s[1]; "
    "else nn += s[1]; });\n"
    "  $('info').textContent = 'NEW drawn, coloured by the change from "
    "BASE (red: a larger share, blue: smaller; dashed: within chance): '"
    " +\n"
    "    'BASE ' + nb + ' samples, NEW ' + nn;\n"
    "}\n"
    "if (data.gpu) {\n"
    "  var prof = $('profile');\n"
    "  prof.add(new Option('CPU samples', 'cpu'));\n"
    "  prof.add(new Option(data.gpu.name, 'gpu'));\n"
    "  if (data.gpu.idle) prof.add(new Option(data.gpu.idle.name, "
    "'idle'));\n"
    "  prof.hidden = false;\n"
    "  prof.addEventListener('change', function () {\n"
    "    gpu = prof.value !== 'cpu';\n"
    "    idle = prof.value === 'idle';\n"
    "    $('thread').disabled = gpu;\n"
    "    choose(gpu ? 'a' : pick);\n"
    "  });\n"
    "  var ns = data.gpu.stacks.reduce(function (a, s) { return a + s[1]; "
    "}, 0);\n"
    "  $('info').textContent += ', GPU ' + (ns / 1e6).toFixed(1) + ' ms';\n"
    "  if (data.gpu.idle) $('info').textContent += ', GPU idle ' +\n"
    "    (data.gpu.idle.stacks.reduce(function (a, s) { return a + s[1]; "
    "}, 0) / 1e6).toFixed(1) + ' ms';\n"
    "}\n"
    /* --gpu: a row per device and stream, each kernel and copy where
     * it ran (or in a long run how busy the stream was); a click on one
     * shows its time in the GPU profile. */
    "function gpuRows() {\n"
    "  var box = $('gpu-rows'), g = data.gpu;\n"
    "  if (!g.rows) return;\n"
    "  $('gpu').hidden = false;\n"
    "  $('gpu-span').textContent = g.rows.length + ' GPU stream' +\n"
    "    (g.rows.length === 1 ? '' : 's') + ' over ' + "
    "g.span_s.toFixed(2) +\n"
    "    ' s from the start of sampling' + (g.summary ? '; the GPU summary' : "
    "'');\n"
    "  $('gpu-summary').textContent = g.summary || '';\n"
    "  g.rows.forEach(function (r) {\n"
    "    var line = document.createElement('div');\n"
    "    var label = document.createElement('span');\n"
    "    var c = document.createElement('canvas');\n"
    "    line.className = 'gr';\n"
    "    label.className = 'gl';\n"
    "    label.textContent = (r.process >= 0 ? data.processes[r.process] + "
    "': ' : '') +\n"
    "      'GPU ' + r.device + ', stream ' + r.stream;\n"
    "    label.title = r.count + ' kernels and copies, ' +\n"
    "      (r.busy_ns / 1e6).toFixed(3) + ' ms busy';\n"
    "    c.spycRow = r;\n"
    "    c.addEventListener('mousemove', function (e) {\n"
    "      var a = spanAt(c, e.offsetX);\n"
    "      c.title = a ? data.frames[a[2]][0] + '\\n' +\n"
    "        (a[1] * 1e3).toFixed(3) + ' ms at ' + a[0].toFixed(6) + ' s' "
    ":\n"
    "        label.title;\n"
    "    });\n"
    "    c.addEventListener('click', function (e) {\n"
    "      var a = spanAt(c, e.offsetX);\n"
    "      if (a) showActivity(data.frames[a[2]]);\n"
    "    });\n"
    "    line.appendChild(label);\n"
    "    line.appendChild(c);\n"
    "    box.appendChild(line);\n"
    "  });\n"
    "  drawRows();\n"
    "}\n"
    "function drawRows() {\n"
    "  var span = data.gpu.span_s || 1;\n"
    "  Array.prototype.forEach.call($('gpu-rows').querySelectorAll("
    "'canvas'),\n"
    "    function (c) {\n"
    "      var r = c.spycRow, w = c.width = c.clientWidth, x = c.getContext("
    "'2d');\n"
    "      c.height = 14;\n"
    "      if (r.bins) r.bins.forEach(function (b, i) {\n"
    "        x.fillStyle = 'rgba(200,70,0,' + (b / 1000).toFixed(3) + ')';\n"
    "        x.fillRect(i * w / r.bins.length, 0, w / r.bins.length + 0.5, "
    "14);\n"
    "      });\n"
    "      if (r.spans) r.spans.forEach(function (a) {\n"
    "        var f = data.frames[a[2]];\n"
    "        x.fillStyle = colour({key: 1, name: f[0], file: f[1]});\n"
    "        x.fillRect(a[0] / span * w, 0, Math.max(1, a[1] / span * w), "
    "14);\n"
    "      });\n"
    "    });\n"
    "}\n"
    /* The span under x px of a row's canvas, or the nearest within 2 px. */
    "function spanAt(c, px) {\n"
    "  var r = c.spycRow, span = data.gpu.span_s || 1, best = null, d = 3;\n"
    "  var t = px / c.clientWidth * span, slack = 2 / c.clientWidth * span;\n"
    "  (r.spans || []).forEach(function (a) {\n"
    "    var e = t < a[0] ? a[0] - t : t > a[0] + a[1] ? t - a[0] - a[1] : "
    "0;\n"
    "    if (e <= slack && e / slack * 2 < d) { best = a; d = e / slack * 2; "
    "}\n"
    "  });\n"
    "  return best;\n"
    "}\n"
    "function showActivity(f) {\n"
    "  if (!gpu || idle) {\n"
    "    $('profile').value = 'gpu';\n"
    "    $('profile').dispatchEvent(new Event('change'));\n"
    "  }\n"
    "  search('^' + text({name: f[0], file: f[1]})\n"
    "    .replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&') + '$');\n"
    "}\n"
    "if (data.gpu) gpuRows();\n"
    "var sel = $('thread');\n"
    "if (data.diff) sel.hidden = true;\n"
    "sel.add(new Option('All threads', 'a'));\n"
    "data.threads.forEach(function (t, i) {\n"
    "  if (data.thread_process[i] < 0) sel.add(new Option(t, 't' + i)); "
    "});\n"
    "data.processes.forEach(function (p, k) {\n"
    "  var g = document.createElement('optgroup');\n"
    "  g.label = p;\n"
    "  g.appendChild(new Option('All of this process', 'p' + k));\n"
    "  data.threads.forEach(function (t, i) {\n"
    "    if (data.thread_process[i] === k) g.appendChild(new Option(t, "
    "'t' + i));\n"
    "  });\n"
    "  sel.appendChild(g);\n"
    "});\n"
    "sel.addEventListener('change', function () { choose(sel.value); });\n"
    "$('reset').addEventListener('click', function () { zoom(root); });\n"
    "$('mode').addEventListener('click', function () {\n"
    "  icicle = !icicle; render(); });\n"
    "$('search').addEventListener('input', function () {\n"
    "  search($('search').value); });\n"
    "Array.prototype.forEach.call(document.querySelectorAll('#table th'),\n"
    "  function (th) { th.addEventListener('click', function () {\n"
    "    sortBy(th.getAttribute('data-k')); }); });\n"
    "window.addEventListener('resize', function () {\n"
    "  render();\n"
    "  if (data.gpu) drawRows();\n"
    "});\n"
    "choose('a');\n"
    "window.spyc = {data: data, zoom: zoom, search: search, sortBy: "
    "sortBy,\n"
    "  choose: choose, root: function () { return root; }, spanAt: "
    "spanAt,\n"
    "  view: function () { return view; } };\n"
    "})();\n"
    "</script>\n"
    "</body></html>\n";

/* Add s (valid UTF-8 made of it) to arr as a string; 0 or -1. */
static int add_string(cJSON *arr, const char *s, struct strbuf *tmp)
{
	cJSON *v = cJSON_CreateString(output_utf8(s ? s : "", tmp));

	return v && cJSON_AddItemToArray(arr, v) ? 0 : -1;
}

/*
 * Add to doc the member "sources": {file: text} for the files of st's
 * frames, busiest first, up to SOURCES_MAX bytes (output_sources).
 * 0 or -1.
 */
static int add_sources(cJSON *doc, const struct stacks *st,
		       const struct profile_meta *meta)
{
	struct output_source *src;
	struct strbuf tmp = STRBUF_INIT, tmp2 = STRBUF_INIT;
	size_t nr = output_sources(st, meta, SOURCES_MAX, &src), i;
	cJSON *sources = cJSON_AddObjectToObject(doc, "sources");
	int bad = !sources;

	for (i = 0; !bad && i < nr; i++)
		if (src[i].text)
			bad |= !cJSON_AddStringToObject(
			    sources, output_utf8(src[i].file, &tmp),
			    output_utf8(src[i].text, &tmp2));
	output_sources_free(src, nr);
	strbuf_release(&tmp);
	strbuf_release(&tmp2);
	return bad ? -1 : 0;
}

/*
 * Add st's stacks to arr as [thread, count, [frame, ...]] (thread 0 for
 * all with one_thread); 0 or -1.
 */
static int add_entries(cJSON *arr, const struct stacks *st, int one_thread)
{
	size_t i, j;
	int bad = 0;

	for (i = 0; !bad && i < st->nr_entries; i++) {
		const struct stack_entry *e = &st->entries[i];
		cJSON *s, *ids;

		if (!e->count)
			continue;
		s = cJSON_CreateArray();
		ids = cJSON_CreateArray();
		bad |= !s || !ids || !cJSON_AddItemToArray(arr, s) ||
		       !cJSON_AddItemToArray(
			   s, cJSON_CreateNumber(one_thread ? 0 : e->thread)) ||
		       !cJSON_AddItemToArray(
			   s, cJSON_CreateNumber((double)e->count)) ||
		       !cJSON_AddItemToArray(s, ids);
		for (j = 0; !bad && j < e->depth; j++)
			bad |= !cJSON_AddItemToArray(
			    ids, cJSON_CreateNumber(e->frames[j]));
	}
	return bad ? -1 : 0;
}

/*
 * Most GPU activities a page draws one by one; a run with more has each
 * stream drawn by how busy it was in each of GPU_BINS spans of time.
 */
#define GPU_SPANS_MAX 50000
#define GPU_BINS 1000
/* Rows of kernels in the GPU summary the page shows. */
#define GPU_SUMMARY_ROWS 20

/* A GPU time on spyc's clock, in seconds from the start of sampling. */
static double gpu_seconds(const struct gpuprof *gp, uint64_t cupti_ns)
{
	return (double)(int64_t)(gpuprof_to_monotonic(gp, cupti_ns) -
				 gp->t0_ns) /
	       1e9;
}

/*
 * The page's GPU part of a --gpu run: its stacks, and a row per device
 * and stream of its activities in timeline order (html_gpu_release()
 * frees the rows), its summary's text in summary.
 */
static void gpu_from_gpuprof(struct html_gpu *pg, const struct gpuprof *gp,
			     struct strbuf *summary)
{
	uint32_t *order = gpuprof_timeline(gp);
	size_t i;

	memset(pg, 0, sizeof(*pg));
	pg->stacks = &gp->stacks;
	pg->idle = &gp->idle;
	pg->name = gpuprof_stacks_name(gp);
	for (i = 0; order && i < gp->nr_acts; i++) {
		const struct gpu_act *act = &gp->acts[order[i]];
		const struct gpu_interval *iv = &act->iv;
		struct html_gpu_row *r =
		    pg->nr_rows ? &pg->rows[pg->nr_rows - 1] : NULL;
		uint64_t start, end;

		if (!r || r->device != iv->device || r->stream != iv->stream) {
			ALLOC_GROW(pg->rows, pg->nr_rows + 1, pg->alloc_rows);
			r = &pg->rows[pg->nr_rows++];
			memset(r, 0, sizeof(*r));
			r->device = iv->device;
			r->stream = iv->stream;
		}
		gpuprof_activity_times(act, &start, &end);
		html_gpu_span(pg, r, gpu_seconds(gp, start),
			      (double)(end - start) / 1e9, gp->leaf[order[i]]);
		r->busy_ns += end - start;
	}
	free(order);
	gpuprof_summary(gp, GPU_SUMMARY_ROWS, summary);
	pg->summary = summary->buf;
}

void html_gpu_span(struct html_gpu *pg, struct html_gpu_row *r, double start,
		   double seconds, uint32_t frame)
{
	ALLOC_GROW(r->spans, r->nr_spans + 1, r->alloc_spans);
	r->spans[r->nr_spans].start = start;
	r->spans[r->nr_spans].seconds = seconds;
	r->spans[r->nr_spans++].frame = frame;
	pg->nr_spans++;
	if (start + seconds > pg->span_s)
		pg->span_s = start + seconds;
}

void html_gpu_release(struct html_gpu *pg)
{
	size_t i;

	for (i = 0; i < pg->nr_rows; i++)
		free(pg->rows[i].spans);
	free(pg->rows);
	memset(pg, 0, sizeof(*pg));
}

/* Add to row the per mille of each bin of [0, span_s) r's spans ran in. */
static int add_bins(cJSON *row, const struct html_gpu_row *r, double span_s)
{
	double busy[GPU_BINS] = {0}, bin = span_s / GPU_BINS;
	cJSON *bins = cJSON_AddArrayToObject(row, "bins");
	size_t i, b;

	for (i = 0; bins && bin > 0 && i < r->nr_spans; i++) {
		double t0 = r->spans[i].start, t1 = t0 + r->spans[i].seconds;

		for (b = t0 > 0 ? (size_t)(t0 / bin) : 0;
		     b < GPU_BINS && b * bin < t1; b++) {
			double lo = b * bin, hi = lo + bin;

			busy[b] += (t1 < hi ? t1 : hi) - (t0 > lo ? t0 : lo);
		}
	}
	for (b = 0; bins && b < GPU_BINS; b++) {
		double pm = bin > 0 ? 1000.0 * busy[b] / bin : 0;

		if (!cJSON_AddItemToArray(
			bins, cJSON_CreateNumber(pm > 1000 ? 1000 : (int)pm)))
			return -1;
	}
	return bins ? 0 : -1;
}

/*
 * Add to g "rows": a row per process, device and stream, {process (an
 * index of the page's processes, -1 for the target), device, stream,
 * count, busy_ns, and "spans": [[start_s, seconds, frame], ...] by start
 * (frame: the activity's name, an id of the page's frames) or "bins"},
 * "span_s" (the time the rows cover, from the start of sampling) and
 * "summary" (the GPU summary's text).  0 or -1.
 */
static int add_gpu_rows(cJSON *g, const struct html_gpu *pg, double duration_s,
			cJSON *processes)
{
	struct strbuf tmp = STRBUF_INIT;
	double span_s = pg->span_s > duration_s ? pg->span_s : duration_s;
	cJSON *rows = cJSON_AddArrayToObject(g, "rows");
	size_t i, j;
	int bad = !rows || !cJSON_AddNumberToObject(g, "span_s", span_s);

	for (i = 0; !bad && i < pg->nr_rows; i++) {
		const struct html_gpu_row *r = &pg->rows[i];
		cJSON *row = cJSON_CreateObject(), *spans = NULL;
		int k = -1, n;

		for (n = 0; r->process && n < cJSON_GetArraySize(processes);
		     n++)
			if (!strcmp(cJSON_GetStringValue(
					cJSON_GetArrayItem(processes, n)),
				    output_utf8(r->process, &tmp)))
				k = n;
		bad |= !row || !cJSON_AddItemToArray(rows, row) ||
		       !cJSON_AddNumberToObject(row, "process", k) ||
		       !cJSON_AddNumberToObject(row, "device", r->device) ||
		       !cJSON_AddNumberToObject(row, "stream", r->stream) ||
		       !cJSON_AddNumberToObject(row, "count",
						(double)r->nr_spans) ||
		       !cJSON_AddNumberToObject(row, "busy_ns",
						(double)r->busy_ns);
		if (!bad && pg->nr_spans > GPU_SPANS_MAX) {
			bad |= add_bins(row, r, span_s);
			continue;
		}
		bad |= !bad && !(spans = cJSON_AddArrayToObject(row, "spans"));
		for (j = 0; !bad && j < r->nr_spans; j++) {
			cJSON *sp = cJSON_CreateArray();

			bad |=
			    !sp || !cJSON_AddItemToArray(spans, sp) ||
			    !cJSON_AddItemToArray(
				sp, cJSON_CreateNumber(r->spans[j].start)) ||
			    !cJSON_AddItemToArray(
				sp, cJSON_CreateNumber(r->spans[j].seconds)) ||
			    !cJSON_AddItemToArray(
				sp, cJSON_CreateNumber(r->spans[j].frame));
		}
	}
	if (!bad && pg->summary)
		bad |= !cJSON_AddStringToObject(g, "summary",
						output_utf8(pg->summary, &tmp));
	strbuf_release(&tmp);
	return bad ? -1 : 0;
}

/* The profile as the viewer reads it; NULL out of memory. */
static cJSON *page_data(const struct stacks *st,
			const struct profile_meta *meta)
{
	const struct gpuprof *gp = meta ? meta->gpu : NULL;
	struct html_gpu own;
	const struct html_gpu *gpu = meta ? meta->html_gpu : NULL;
	struct strbuf summary = STRBUF_INIT;
	/* With GPU stacks, whose frames include the CPU ones: all of them. */
	const struct stacks *fst;
	cJSON *doc = cJSON_CreateObject(), *threads, *frames, *stacks;
	cJSON *processes, *of;
	struct strbuf tmp = STRBUF_INIT;
	const char **procs;
	char label[512];
	size_t i, nr_procs = 0;
	int bad = !doc;

	if (bad)
		return NULL;
	memset(&own, 0, sizeof(own));
	if (gp && gp->leaf) {
		gpu_from_gpuprof(&own, gp, &summary);
		gpu = &own;
	}
	fst = gpu ? gpu->stacks : st;
	if (meta && meta->title)
		bad |= !cJSON_AddStringToObject(doc, "title",
						output_utf8(meta->title, &tmp));
	if (meta && meta->python_version)
		bad |= !cJSON_AddStringToObject(doc, "python",
						meta->python_version);
	bad |=
	    !cJSON_AddNumberToObject(doc, "rate_hz", meta ? meta->rate_hz : 0);
	bad |= !cJSON_AddNumberToObject(doc, "duration_s",
					meta ? meta->duration_s : 0);
	bad |=
	    !cJSON_AddNumberToObject(doc, "samples", (double)st->total_samples);
	if (meta && meta->diff)
		bad |= !cJSON_AddTrueToObject(doc, "diff");
	bad |= !(threads = cJSON_AddArrayToObject(doc, "threads"));
	bad |= !(processes = cJSON_AddArrayToObject(doc, "processes"));
	bad |= !(of = cJSON_AddArrayToObject(doc, "thread_process"));
	bad |= !(frames = cJSON_AddArrayToObject(doc, "frames"));
	bad |= !(stacks = cJSON_AddArrayToObject(doc, "stacks"));
	/*
	 * Following several processes, each thread is named alone and
	 * said to be of its process (labels are interned: one pointer).
	 */
	procs = xcalloc(st->nr_threads + 1, sizeof(*procs));
	for (i = 0; !bad && i < st->nr_threads; i++) {
		const struct stack_thread *t = &st->threads[i];
		size_t k;

		stacks_thread_label(t, label, sizeof(label));
		bad |= add_string(threads, label, &tmp);
		for (k = 0;
		     t->process && k < nr_procs && procs[k] != t->process; k++)
			;
		if (t->process && k == nr_procs) {
			procs[nr_procs++] = t->process;
			bad |= add_string(processes, t->process, &tmp);
		}
		bad |= !cJSON_AddItemToArray(
		    of, cJSON_CreateNumber(t->process ? (double)k : -1));
	}
	free(procs);
	for (i = 0; !bad && i < fst->nr_frames; i++) {
		const struct stack_frame *f = &fst->frames[i];
		cJSON *fr = cJSON_CreateArray();

		bad |= !fr || !cJSON_AddItemToArray(frames, fr) ||
		       add_string(fr, f->name, &tmp) ||
		       add_string(fr, f->file, &tmp) ||
		       !cJSON_AddItemToArray(fr, cJSON_CreateNumber(f->line));
	}
	bad |= !bad && add_entries(stacks, st, 0);
	if (!bad && gpu) {
		cJSON *g = cJSON_AddObjectToObject(doc, "gpu");

		bad |= !g ||
		       !cJSON_AddStringToObject(g, "name",
						output_utf8(gpu->name, &tmp)) ||
		       !(stacks = cJSON_AddArrayToObject(g, "stacks")) ||
		       add_entries(stacks, gpu->stacks, 1) ||
		       add_gpu_rows(g, gpu, meta ? meta->duration_s : 0,
				    processes);
		if (!bad && gpu->idle && gpu->idle->nr_entries) {
			cJSON *idle = cJSON_AddObjectToObject(g, "idle");

			bad |= !idle ||
			       !cJSON_AddStringToObject(
				   idle, "name", PROFILE_GPU_IDLE_NAME) ||
			       !(stacks =
				     cJSON_AddArrayToObject(idle, "stacks")) ||
			       add_entries(stacks, gpu->idle, 1);
		}
	}
	html_gpu_release(&own);
	strbuf_release(&summary);
	strbuf_release(&tmp);
	if (bad || add_sources(doc, st, meta)) {
		cJSON_Delete(doc);
		return NULL;
	}
	return doc;
}

/*
 * Write json into the page's script element: '<' as \u003c, so that no
 * "</script>" in a frame's name or file ends the element early.
 */
static int write_json(FILE *fp, const char *json)
{
	const char *p = json, *lt;

	while ((lt = strchr(p, '<'))) {
		if (fwrite(p, 1, (size_t)(lt - p), fp) != (size_t)(lt - p) ||
		    fputs("\\u003c", fp) == EOF)
			return -EIO;
		p = lt + 1;
	}
	return fputs(p, fp) == EOF ? -EIO : 0;
}

int out_html_write(FILE *fp, const struct stacks *st,
		   const struct profile_meta *meta)
{
	cJSON *doc = page_data(st, meta);
	char *json;
	int ret;

	if (!doc)
		return -ENOMEM;
	json = cJSON_PrintUnformatted(doc);
	cJSON_Delete(doc);
	if (!json)
		return -ENOMEM;
	ret = fputs(page_head, fp) == EOF ? -EIO : write_json(fp, json);
	if (!ret && fputs(page_tail, fp) == EOF)
		ret = -EIO;
	free(json);
	return ret;
}
