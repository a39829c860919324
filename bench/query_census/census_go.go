// The independent census of Go: the queries at known database calls, read with Go's own parser
// (go/ast), not Sluice's tree-sitter code. Prints one JSON object per call:
// {"file", "line", "kind": "literal"|"constant"|"dynamic", "call"}. A name resolves to its value
// in the function, else among the package-level declarations of every file of the directory
// (which Sluice, reading a file at a time, does not do).
//
// Usage: go run census_go.go ROOT
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

var methods = map[string]bool{
	"Query": true, "QueryRow": true, "Exec": true, "Prepare": true,
	"QueryContext": true, "QueryRowContext": true, "ExecContext": true, "PrepareContext": true,
	"Get": true, "Select": true, "GetContext": true, "SelectContext": true,
	"NamedExec": true, "NamedExecContext": true, "NamedQuery": true, "NamedQueryContext": true,
	"Queryx": true, "QueryRowx": true, "QueryxContext": true, "QueryRowxContext": true,
	"MustExec": true, "MustExecContext": true, "Queue": true,
}

type item struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Kind string `json:"kind"`
	Call string `json:"call"`
}

type scope func(name string) []ast.Expr

func main() {
	root := os.Args[1]
	dirs := map[string][]string{}
	filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		name := info.Name()
		if info.IsDir() && path != root && (name == "node_modules" || strings.HasPrefix(name, ".") || name == "vendor") {
			return filepath.SkipDir
		}
		if !info.IsDir() && strings.HasSuffix(name, ".go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], path)
		}
		return nil
	})
	out := json.NewEncoder(os.Stdout)
	for _, files := range dirs {
		fset := token.NewFileSet()
		var parsed []*ast.File
		pkg := map[string][]ast.Expr{}
		for _, path := range files {
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
				continue
			}
			parsed = append(parsed, f)
			for _, decl := range f.Decls {
				if gen, ok := decl.(*ast.GenDecl); ok {
					collect(gen, pkg)
				}
			}
		}
		pkgLookup := func(name string) []ast.Expr { return pkg[name] }
		for _, f := range parsed {
			for _, decl := range f.Decls {
				ast.Inspect(decl, func(n ast.Node) bool {
					switch fn := n.(type) {
					case *ast.FuncDecl:
						if fn.Body != nil {
							function(fset, fn.Body, pkgLookup, out)
						}
						return false
					case *ast.FuncLit:
						function(fset, fn.Body, pkgLookup, out)
						return false
					}
					return true
				})
			}
		}
	}
}

// function reports the calls of a function body (its nested function literals each on their own,
// with this body's names in scope).
func function(fset *token.FileSet, body *ast.BlockStmt, outer scope, out *json.Encoder) {
	locals := map[string][]ast.Expr{}
	collect(body, locals)
	lookup := func(name string) []ast.Expr {
		if vs, ok := locals[name]; ok {
			return vs
		}
		return outer(name)
	}
	ast.Inspect(body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.FuncLit); ok {
			function(fset, lit.Body, lookup, out)
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !methods[sel.Sel.Name] {
			return true
		}
		// The SQL argument: the first one that is a string expression.
		for _, arg := range call.Args {
			kind, pos := classify(arg, lookup, 0)
			if kind == "" {
				continue
			}
			if sqlLike(firstLiteral(arg, lookup)) {
				p := fset.Position(pos)
				out.Encode(item{File: p.Filename, Line: p.Line, Kind: kind, Call: sel.Sel.Name})
			}
			break
		}
		return true
	})
}

// collect records every `const`/`var` spec and `:=` under n; a plain assignment is a change (nil).
func collect(n ast.Node, values map[string][]ast.Expr) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch d := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ValueSpec:
			for i, name := range d.Names {
				if i < len(d.Values) {
					values[name.Name] = append(values[name.Name], d.Values[i])
				}
			}
		case *ast.AssignStmt:
			for i, l := range d.Lhs {
				if id, ok := l.(*ast.Ident); ok {
					if d.Tok == token.DEFINE && len(d.Lhs) == len(d.Rhs) {
						values[id.Name] = append(values[id.Name], d.Rhs[i])
					} else {
						values[id.Name] = append(values[id.Name], nil)
					}
				}
			}
		}
		return true
	})
}

// classify says whether e is a string literal, a constant (through names), built at run time
// ("dynamic") or not a string (""), with the position of its first literal.
func classify(e ast.Expr, lookup scope, depth int) (string, token.Pos) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind == token.STRING {
			return "literal", v.Pos()
		}
	case *ast.ParenExpr:
		return classify(v.X, lookup, depth)
	case *ast.BinaryExpr:
		if v.Op == token.ADD {
			k1, p := classify(v.X, lookup, depth)
			k2, _ := classify(v.Y, lookup, depth)
			switch {
			case k1 == "dynamic" || k2 == "dynamic" || k1 == "" || k2 == "":
				return "dynamic", p
			case k1 == "constant" || k2 == "constant":
				return "constant", p
			}
			return "literal", p
		}
	case *ast.Ident:
		vs := lookup(v.Name)
		if len(vs) == 1 && vs[0] != nil && depth < 10 {
			k, p := classify(vs[0], lookup, depth+1)
			if k == "literal" || k == "constant" {
				return "constant", p
			}
			return k, p
		}
		if len(vs) > 1 {
			if vs[0] != nil {
				_, p := classify(vs[0], lookup, depth+1)
				return "dynamic", p
			}
			return "dynamic", v.Pos()
		}
	case *ast.CallExpr:
		return "dynamic", v.Pos()
	}
	return "", e.Pos()
}

// firstLiteral is the text of the first literal an expression starts with.
func firstLiteral(e ast.Expr, lookup scope) string {
	for depth := 0; depth < 10; depth++ {
		switch v := e.(type) {
		case *ast.BasicLit:
			return strings.Trim(v.Value, "`\"")
		case *ast.ParenExpr:
			e = v.X
		case *ast.BinaryExpr:
			e = v.X
		case *ast.CallExpr:
			if len(v.Args) == 0 {
				return ""
			}
			e = v.Args[0]
		case *ast.Ident:
			vs := lookup(v.Name)
			if len(vs) == 0 || vs[0] == nil {
				return ""
			}
			e = vs[0]
		default:
			return ""
		}
	}
	return ""
}

// sqlLike: a statement keyword and at least one more word (a looser test than Sluice's).
func sqlLike(s string) bool {
	s = strings.TrimLeft(s, " \t\n\r(")
	end := strings.IndexFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
	if end <= 0 || !strings.ContainsAny(s[end:end+1], " \t\r\n") || strings.TrimSpace(s[end:]) == "" {
		return false
	}
	switch strings.ToUpper(s[:end]) {
	case "SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "CREATE", "ALTER", "DROP", "TRUNCATE", "COPY", "CALL",
		"SET", "LOCK", "VACUUM", "ANALYZE", "REFRESH", "BEGIN", "COMMIT", "ROLLBACK", "EXPLAIN", "VALUES", "MERGE",
		"DECLARE", "FETCH", "CLOSE", "MOVE", "PREPARE", "EXECUTE", "DO", "GRANT", "REVOKE", "COMMENT", "SHOW":
		return true
	}
	return false
}
