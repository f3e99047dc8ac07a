// Package when compiles and evaluates the when conditions of effect
// configurations: expr-lang expressions over Env, bounded in size when
// compiled and in time, memory and string length when evaluated, since a
// configuration file may come from elsewhere. Package builtin documents
// the language (builtin.WhenEnv) and the limits (builtin.WhenMaxNodes, …).
package when

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

// Limits of a condition (builtin.WhenMaxNodes and the others).
const (
	// MaxNodes is the most nodes a condition's syntax tree may have.
	MaxNodes = 1000
	// MaxRange is the most elements a range with constant bounds may have.
	MaxRange = 10_000
	// MaxString is the longest string, in bytes, a condition may build.
	MaxString = 1 << 20
	// MemoryBudget is expr's memory budget for one evaluation.
	MemoryBudget = 100_000
)

// Errors an evaluation can end with (builtin.ErrWhenTimeout and
// builtin.ErrWhenTooLarge).
var (
	ErrTimeout  = errors.New("condition ran past its time limit")
	ErrTooLarge = errors.New("condition built a value past its size limit")
)

// Env is what a condition sees; builtin.WhenEnv, which documents it, has
// the same fields.
type Env struct {
	Tokens   int     `expr:"tokens"`
	Window   int     `expr:"window"`
	Step     int     `expr:"step"`
	Cost     float64 `expr:"cost"`
	Messages int     `expr:"messages"`
	LastTool string  `expr:"last_tool"`
}

// Uses reports whether prog refers to the variable name, so that a caller
// computes a costly variable only for the conditions that read it.
func Uses(prog *vm.Program, name string) bool {
	return ast.Find(prog.Node(), func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		return ok && id.Value == name
	}) != nil
}

// guard is what bounds one evaluation: the run's context and the
// deadline of the condition's time limit. The compiled condition calls
// check (as __check) on the value of every loop body and of every
// expression that builds a string.
type guard struct {
	ctx      context.Context
	deadline time.Time
}

func (g *guard) check(v any) error {
	if err := g.ctx.Err(); err != nil {
		return err
	}
	if time.Now().After(g.deadline) {
		return ErrTimeout
	}
	if s, ok := v.(string); ok && len(s) > MaxString {
		return ErrTooLarge
	}
	return nil
}

// evalEnv is the environment a condition runs in: Env and the guard.
type evalEnv struct {
	Env
	Guard *guard `expr:"__guard"`
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
			g, _ := params[0].(*guard)
			if g == nil {
				return nil, errors.New("a check called without its guard")
			}
			if err := g.check(params[1]); err != nil {
				return nil, err
			}
			return params[1], nil
		}
		guardType := reflect.TypeFor[*guard]()
		opts := []expr.Option{expr.Function("__check", check, new(func(*guard, any) any))}
		for t, name := range checkNames {
			ft := reflect.FuncOf([]reflect.Type{guardType, t}, []reflect.Type{t}, false)
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

// Compile compiles a condition with its limits: at most MaxNodes
// nodes and no constant range over MaxRange elements. The errors are
// *file.Error values, located in src.
func Compile(src string) (*vm.Program, error) {
	opts := append([]expr.Option{expr.Env(evalEnv{}), expr.AsBool(), expr.MaxNodes(MaxNodes)}, checkFuncs...)
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
		if okLo && okHi && hi-lo >= MaxRange {
			big = b
			return true
		}
		return false
	})
	if big != nil {
		fe := &file.Error{Location: big.Location(), Message: fmt.Sprintf("range of more than %d elements", MaxRange)}
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

// Eval evaluates prog with env, bounded by limit and ctx. The error is
// the cause (ErrTimeout, ErrTooLarge, ctx's error) or expr's.
func Eval(ctx context.Context, prog *vm.Program, env Env, limit time.Duration) (bool, error) {
	g := &guard{ctx: ctx, deadline: time.Now().Add(limit)}
	if err := g.check(nil); err != nil {
		return false, err
	}
	m := vm.VM{MemoryBudget: MemoryBudget}
	out, err := m.Run(prog, evalEnv{Env: env, Guard: g})
	if err != nil {
		for _, cause := range []error{ErrTimeout, ErrTooLarge, context.Canceled, context.DeadlineExceeded} {
			if errors.Is(err, cause) {
				return false, cause
			}
		}
		var fe *file.Error
		if errors.As(err, &fe) && fe.Message == "memory budget exceeded" {
			return false, ErrTooLarge
		}
		return false, err
	}
	ok, _ := out.(bool)
	return ok, nil
}
