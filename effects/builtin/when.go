package builtin

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// DefaultWhenTimeout bounds the evaluation of one when condition when
// Config.WhenTimeout is zero. A condition over WhenEnv takes microseconds;
// the bound only stops a hostile or mistaken one.
const DefaultWhenTimeout = 50 * time.Millisecond

// Limits of a when condition, checked by Parse (and by Register for
// conditions set in code) or while it is evaluated.
const (
	// WhenMaxNodes is the most nodes a condition's syntax tree may have.
	WhenMaxNodes = 1000
	// WhenMaxRange is the most elements a range with constant bounds
	// (1..100) may have.
	WhenMaxRange = 10_000
	// WhenMaxString is the longest string, in bytes, a condition may build.
	WhenMaxString = 1 << 20
	// WhenMemoryBudget is expr's memory budget for one evaluation: the
	// elements of the arrays, ranges and maps it builds, all together.
	WhenMemoryBudget = 100_000
)

// Errors a when condition's evaluation can end with, in a *WhenError.
var (
	// ErrWhenTimeout: the condition ran longer than its time limit
	// (Config.WhenTimeout).
	ErrWhenTimeout = errors.New("condition ran past its time limit")
	// ErrWhenTooLarge: the condition built a string longer than
	// WhenMaxString or arrays past WhenMemoryBudget.
	ErrWhenTooLarge = errors.New("condition built a value past its size limit")
)

// WhenError is a when condition whose evaluation failed: it ran past its
// time limit (Err is ErrWhenTimeout), the run's context ended while it ran
// (Err is the context's error), it built too large a value (Err is
// ErrWhenTooLarge), or expr reported an error (Err is expr's *file.Error:
// a run-time error, or a compile error of a condition set in code, which
// Parse would have reported as a *ConfigError). The effect fails with it,
// and so does the run.
type WhenError struct {
	// File, Line and Column locate the condition in its configuration file
	// (1-based); Line is 0 for a condition set in code.
	File         string
	Line, Column int
	// When is the condition's source.
	When string
	// Limit is the time limit the condition had.
	Limit time.Duration
	Err   error
}

func (e *WhenError) Error() string {
	msg := e.Err.Error()
	switch {
	case errors.Is(e.Err, ErrWhenTimeout):
		msg = fmt.Sprintf("%v (%v)", e.Err, e.Limit)
	case errors.Is(e.Err, context.Canceled), errors.Is(e.Err, context.DeadlineExceeded):
		msg = "stopped: " + msg
	}
	var fe *file.Error
	if errors.As(e.Err, &fe) {
		msg = fe.Message
	}
	if e.Line == 0 {
		return fmt.Sprintf("when %q: %s", e.When, msg)
	}
	return fmt.Sprintf("%s:%d:%d: when %q: %s", e.File, e.Line, e.Column, e.When, msg)
}

// Unwrap returns Err.
func (e *WhenError) Unwrap() error { return e.Err }

// whenGuard is what bounds one evaluation: the run's context and the
// deadline of the condition's time limit. The compiled condition calls
// check (as __check) on the value of every loop body and of every
// expression that builds a string.
type whenGuard struct {
	ctx      context.Context
	deadline time.Time
}

func (g *whenGuard) check(v any) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	if time.Now().After(g.deadline) {
		return ErrWhenTimeout
	}
	if s, ok := v.(string); ok && len(s) > WhenMaxString {
		return ErrWhenTooLarge
	}
	return nil
}

// whenEval is the environment a condition runs in: WhenEnv and the guard.
type whenEval struct {
	WhenEnv
	Guard *whenGuard `expr:"__guard"`
}

const guardName = "__guard"

// checkFuncs are __check(guard, v) and its typed variants, which return v
// or the guard's error. Each has one type, so that a checked expression
// keeps the type the checker found for it.
var (
	checkNames = map[reflect.Type]string{
		reflect.TypeFor[bool]():    "__check_bool",
		reflect.TypeFor[int]():     "__check_int",
		reflect.TypeFor[float64](): "__check_float",
		reflect.TypeFor[string]():  "__check_string",
	}
	checkFuncs = func() []expr.Option {
		check := func(params ...any) (any, error) {
			g, _ := params[0].(*whenGuard)
			if g == nil {
				return nil, errors.New("a check called without its guard")
			}
			if err := g.check(params[1]); err != nil {
				return nil, err
			}
			return params[1], nil
		}
		guard := reflect.TypeFor[*whenGuard]()
		opts := []expr.Option{expr.Function("__check", check, new(func(*whenGuard, any) any))}
		for t, name := range checkNames {
			ft := reflect.FuncOf([]reflect.Type{guard, t}, []reflect.Type{t}, false)
			opts = append(opts, expr.Function(name, check, reflect.New(ft).Interface()))
		}
		return opts
	}()
)

var stringType = reflect.TypeFor[string]()

// guardPatch wraps every loop body (the predicate of all, map, reduce, …)
// and every operation or builtin that may build a string in a check, so
// that an
// evaluation stops at its deadline, when the run's context ends, or when a
// string grows too long.
type guardPatch struct{}

func (guardPatch) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.PredicateNode:
		n.Node = guardCall(n.Node)
	case *ast.BinaryNode, *ast.BuiltinNode:
		// A string, or a value of unknown type that may be one (fromJSON,
		// and what is built from it).
		if t := n.Type(); t == stringType || t == nil || t.Kind() == reflect.Interface {
			*node = guardCall(n)
		}
	}
}

func guardCall(n ast.Node) ast.Node {
	name, ok := checkNames[n.Type()]
	if !ok {
		name = "__check"
	}
	call := &ast.CallNode{
		Callee:    &ast.IdentifierNode{Value: name},
		Arguments: []ast.Node{&ast.IdentifierNode{Value: guardName}, n},
	}
	call.SetLocation(n.Location())
	return call
}

// compileWhen compiles a condition with its limits: at most WhenMaxNodes
// nodes and no constant range over WhenMaxRange elements. The errors are
// *file.Error values, located in src.
func compileWhen(src string) (*vm.Program, error) {
	opts := append([]expr.Option{expr.Env(whenEval{}), expr.AsBool(), expr.MaxNodes(WhenMaxNodes)}, checkFuncs...)
	prog, err := expr.Compile(src, append(opts, expr.Patch(guardPatch{}))...)
	if err != nil {
		return nil, err
	}
	var big ast.Node
	ast.Find(prog.Node(), func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryNode)
		if !ok || b.Operator != ".." {
			return false
		}
		lo, okLo := constInt(b.Left)
		hi, okHi := constInt(b.Right)
		if okLo && okHi && hi-lo >= WhenMaxRange {
			big = b
			return true
		}
		return false
	})
	if big != nil {
		fe := &file.Error{Location: big.Location(), Message: fmt.Sprintf("range of more than %d elements", WhenMaxRange)}
		return nil, fe.Bind(file.NewSource(src))
	}
	return prog, nil
}

func constInt(n ast.Node) (int, bool) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		return n.Value, true
	case *ast.UnaryNode:
		if v, ok := constInt(n.Node); ok && n.Operator == "-" {
			return -v, true
		}
	}
	return 0, false
}

// evalWhen evaluates prog with env, bounded by limit and ctx. The error is
// the cause (ErrWhenTimeout, ErrWhenTooLarge, ctx's error) or expr's.
func evalWhen(ctx context.Context, prog *vm.Program, env WhenEnv, limit time.Duration) (bool, error) {
	g := &whenGuard{ctx: ctx, deadline: time.Now().Add(limit)}
	if err := g.check(nil); err != nil {
		return false, err
	}
	m := vm.VM{MemoryBudget: WhenMemoryBudget}
	out, err := m.Run(prog, whenEval{WhenEnv: env, Guard: g})
	if err != nil {
		for _, cause := range []error{ErrWhenTimeout, ErrWhenTooLarge, context.Canceled, context.DeadlineExceeded} {
			if errors.Is(err, cause) {
				return false, cause
			}
		}
		var fe *file.Error
		if errors.As(err, &fe) && fe.Message == "memory budget exceeded" {
			return false, ErrWhenTooLarge
		}
		return false, err
	}
	ok, _ := out.(bool)
	return ok, nil
}
