// The independent census of TypeScript and JavaScript: the queries at known database calls,
// read with the TypeScript compiler's own parser (the `typescript` package), not Sluice's
// tree-sitter code. Prints one JSON object a line: {"file", "line", "kind", "call"}.
//
// Usage: NODE_PATH=DIR/node_modules node census_ts.js FILE...
const ts = require("typescript");
const fs = require("fs");

const KEYWORDS = new Set(["SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CREATE", "ALTER", "DROP", "TRUNCATE",
  "COPY", "CALL", "SET", "LOCK", "VALUES", "MERGE", "REFRESH", "VACUUM", "ANALYZE", "DECLARE", "FETCH", "DO"]);
const sqlLike = (text) => {
  const match = /^[\s(]*([A-Za-z]+)\s+\S/.exec(text);
  return match !== null && KEYWORDS.has(match[1].toUpperCase());
};

for (const file of process.argv.slice(2)) {
  const text = fs.readFileSync(file, "utf8");
  const kind = file.endsWith(".tsx") ? ts.ScriptKind.TSX : file.match(/\.[cm]?js$|\.jsx$/) ? ts.ScriptKind.JSX : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
  const values = new Map();
  const visitValues = (node) => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      values.set(node.name.text, [...(values.get(node.name.text) || []), node.initializer]);
    }
    if (ts.isBinaryExpression(node) && node.operatorToken.kind >= ts.SyntaxKind.FirstAssignment &&
        node.operatorToken.kind <= ts.SyntaxKind.LastAssignment && ts.isIdentifier(node.left)) {
      values.set(node.left.text, [...(values.get(node.left.text) || []), null]);
    }
    ts.forEachChild(node, visitValues);
  };
  visitValues(source);
  const emit = (at, kind, call) => {
    const line = source.getLineAndCharacterOfPosition(at.getStart(source)).line + 1;
    console.log(JSON.stringify({ file, line, kind, call }));
  };
  // [kind, first literal node]
  const classify = (e, depth = 0) => {
    if (depth > 10) return ["dynamic", e];
    while (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e)) e = e.expression;
    if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return ["literal", e];
    if (ts.isTemplateExpression(e)) return ["dynamic", e];
    if (ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      const [l, at] = classify(e.left, depth), [r] = classify(e.right, depth);
      if (!l || !r || l === "dynamic" || r === "dynamic") return ["dynamic", at];
      return [l === "constant" || r === "constant" ? "constant" : "literal", at];
    }
    if (ts.isIdentifier(e)) {
      const vs = values.get(e.text) || [];
      if (vs.length === 1 && vs[0]) {
        const [k, at] = classify(vs[0], depth + 1);
        return [k && k !== "dynamic" ? "constant" : k, at];
      }
      return [vs.length > 1 ? "dynamic" : null, e];
    }
    if (ts.isCallExpression(e)) return ["dynamic", e];
    return [null, e];
  };
  const literalText = (node) => (node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) ? node.text
    : node && ts.isTemplateExpression(node) ? node.head.text : "");
  const visit = (node) => {
    if (ts.isTaggedTemplateExpression(node)) {
      const tag = node.tag.getText(source).replace(/<.*$/s, "");
      if (/\$(queryRaw|executeRaw)$/.test(tag)) emit(node.template, "literal", "$queryRaw");
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.arguments.length > 0) {
      const name = node.expression.name.text;
      let arg = node.arguments[0];
      if (name === "query" && ts.isObjectLiteralExpression(arg)) {
        const text = arg.properties.find((p) => ts.isPropertyAssignment(p) && p.name.getText(source) === "text");
        arg = text ? text.initializer : arg;
      }
      if (["query", "raw", "$queryRawUnsafe", "$executeRawUnsafe"].includes(name)) {
        const [kind, at] = classify(arg);
        if (kind && sqlLike(literalText(at))) emit(at, kind, name);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
}
