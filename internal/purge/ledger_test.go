package purge

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The ledger is the only writer of the report: a pass's requests are
// answered on its workers and the API server's warnings on client-go's
// goroutines, so a field of the report set anywhere but under the ledger's
// lock is a race the race detector finds only when both happen at once.
// Outside ledger.go, the report's fields are set only inside a function
// that the ledger calls with the report (update, or an actor's record).
func TestOnlyTheLedgerWritesTheReport(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "ledger.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		var under []bool // for each enclosing function literal: is it given the report?
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.FuncLit:
				under = append(under, givenReport(x))
				ast.Inspect(x.Body, visit)
				under = under[:len(under)-1]
				return false
			case *ast.AssignStmt:
				for _, lhs := range x.Lhs {
					if writesReport(lhs) && !insideLedger(under) {
						t.Errorf("%s: the report is written outside the ledger", fset.Position(lhs.Pos()))
					}
				}
			}
			return true
		}
		ast.Inspect(f, visit)
	}
	if checked < 20 {
		t.Fatalf("only %d files checked", checked)
	}
}

// givenReport: a function literal whose parameter is the report, as the
// ledger's update and an actor's record call it.
func givenReport(f *ast.FuncLit) bool {
	for _, p := range f.Type.Params.List {
		if star, ok := p.Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == "Report" {
				return true
			}
		}
	}
	return false
}

func insideLedger(under []bool) bool {
	for _, u := range under {
		if u {
			return true
		}
	}
	return false
}

// writesReport: an assignment to a field (or an element of a field) of
// the report, as the run's code names it: rep.X, report.X, r.report.X.
func writesReport(e ast.Expr) bool {
	for {
		switch x := e.(type) {
		case *ast.IndexExpr:
			e = x.X
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && (id.Name == "rep" || id.Name == "report") {
				return true
			}
			if sel, ok := x.X.(*ast.SelectorExpr); ok && sel.Sel.Name == "report" {
				return true
			}
			e = x.X
		default:
			return false
		}
	}
}
