package effects

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Deps is an effect's dependency list. It decides the effect's cadence:
//
//   - Always: the effect runs at every step;
//   - Once (an empty list): the effect runs the first time it is registered,
//     which is step 0 for an effect declared unconditionally;
//   - On(values...): the effect runs the first time and then at every step
//     where any value differs from the values of its last run.
//
// Always and Once are constants, which no package can reassign. A nil Deps
// means Always.
//
// Values are compared by value, deeply: slices, arrays, maps, structs
// (unexported fields included) and the values pointers point to are compared
// element by element, NaN equals NaN, and nothing panics. Functions and
// channels, which have no value to compare, are compared by identity. A
// value is recorded when the effect runs, so mutating a slice in place after
// passing it is seen as a change at the next step.
//
// Deps is sealed: only the values of this package implement it.
type Deps interface {
	// values returns whether d is a list (not Always) and its values.
	values() (list bool, vals []any)
}

// Cadence is a dependency list without values: Always or Once.
type Cadence uint8

const (
	// Always is the dependency list of an effect that runs at every step.
	Always Cadence = iota
	// Once is the empty dependency list: the effect runs the first time only.
	Once
)

func (c Cadence) values() (bool, []any) { return c == Once, nil }

// String returns "Always" or "Once".
func (c Cadence) String() string {
	if c == Once {
		return "Once"
	}
	return "Always"
}

// list is the dependency list On returns for more than four values.
type list []any

func (l list) values() (bool, []any) { return true, l }

// The lists of one to four values are arrays held by pointer: On copies
// its values into one allocation, and its variadic slice, which does not
// escape, costs none.
type (
	list1 [1]any
	list2 [2]any
	list3 [3]any
	list4 [4]any
)

func (l *list1) values() (bool, []any) { return true, l[:] }
func (l *list2) values() (bool, []any) { return true, l[:] }
func (l *list3) values() (bool, []any) { return true, l[:] }
func (l *list4) values() (bool, []any) { return true, l[:] }

// On returns a dependency list of values. On() with no values is Once.
// The list is On's own copy: a slice passed as On(vals...) may be reused
// once On returns (the values in it are compared as they are when the
// effect runs, see Deps).
func On(values ...any) Deps {
	switch len(values) {
	case 0:
		return Once
	case 1:
		return &list1{values[0]}
	case 2:
		return &list2{values[0], values[1]}
	case 3:
		return &list3{values[0], values[1], values[2]}
	case 4:
		return &list4{values[0], values[1], values[2], values[3]}
	}
	return list(slices.Clone(values))
}

// Named labels a dependency value so that the reason an effect ran names it:
// On(Named("count", count)) reports `count: 1 → 2`.
func Named(name string, value any) any { return named{name, value} }

type named struct {
	name  string
	value any
}

// isAlways reports whether d is Always (or nil).
func isAlways(d Deps) bool {
	if d == nil {
		return true
	}
	l, _ := d.values()
	return !l
}

// encodeDeps renders each dependency value as canonical text: two values
// compare equal as dependencies exactly when their encodings are equal. The
// names of Named values are returned alongside ("" for unnamed ones).
func encodeDeps(d Deps) (vals, names []string) {
	if d == nil {
		return nil, nil
	}
	_, dv := d.values()
	if len(dv) == 0 {
		return nil, nil
	}
	vals = make([]string, len(dv))
	for i, v := range dv {
		if n, ok := v.(named); ok {
			if names == nil {
				names = make([]string, len(dv))
			}
			names[i] = n.name
			v = n.value
		}
		vals[i] = Encode(v)
	}
	return vals, names
}

// depsUnchanged reports whether the values of d encode as prev, without
// allocating for the common dependency types.
func depsUnchanged(d Deps, prev []string) bool {
	var vals []any
	if d != nil {
		_, vals = d.values()
	}
	if len(prev) != len(vals) {
		return false
	}
	for i, v := range vals {
		if n, ok := v.(named); ok {
			v = n.value
		}
		if !encodesAs(v, prev[i]) {
			return false
		}
	}
	return true
}

// encodesAs reports whether Encode(v) == enc.
func encodesAs(v any, enc string) bool {
	var buf [64]byte
	switch x := v.(type) {
	case string:
		if len(x)+2 <= len(buf) {
			return string(strconv.AppendQuote(buf[:0], x)) == enc
		}
	case int:
		return string(strconv.AppendInt(buf[:0], int64(x), 10)) == enc
	case bool:
		return string(strconv.AppendBool(buf[:0], x)) == enc
	}
	return Encode(v) == enc
}

// Encode returns the canonical text of v used to compare dependency values.
// It is deterministic (map keys are sorted), follows pointers with cycle
// detection, reads unexported fields, writes NaN as NaN, and never panics.
func Encode(v any) string {
	if v == nil {
		return "nil"
	}
	switch x := v.(type) { // fast paths for the common dependency types
	case string:
		return strconv.Quote(x)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	}
	var b strings.Builder
	e := encoder{b: &b}
	e.value(reflect.ValueOf(v), 0)
	return b.String()
}

type encoder struct {
	b *strings.Builder
	// visited holds the pointers, maps and slices on the path being encoded,
	// so that a value containing itself is written once, as <cycle>.
	visited map[visit]bool
}

// visit identifies a reference on the path: its address, type and (for a
// slice) length, so that a struct and its first field, or a slice and a
// shorter slice of it, are not mistaken for each other.
type visit struct {
	p uintptr
	t reflect.Type
	n int
}

// enter records v on the path and reports false if it is already there (a
// cycle, written as <cycle>). leave must be called when enter returned true.
func (e *encoder) enter(v reflect.Value, n int) (visit, bool) {
	k := visit{v.Pointer(), v.Type(), n}
	if e.visited[k] {
		e.b.WriteString("<cycle>")
		return k, false
	}
	if e.visited == nil {
		e.visited = make(map[visit]bool)
	}
	e.visited[k] = true
	return k, true
}

const maxDepth = 64

var timeType = reflect.TypeFor[time.Time]()

func (e *encoder) value(v reflect.Value, depth int) {
	b := e.b
	if depth > maxDepth {
		b.WriteString("…")
		return
	}
	if !v.IsValid() {
		b.WriteString("nil")
		return
	}
	if v.Type() == timeType && v.CanInterface() {
		b.WriteString(v.Interface().(time.Time).Format(time.RFC3339Nano))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		e.float(v.Float())
	case reflect.Complex64, reflect.Complex128:
		c := v.Complex()
		b.WriteByte('(')
		e.float(real(c))
		b.WriteByte(',')
		e.float(imag(c))
		b.WriteByte(')')
	case reflect.String:
		b.WriteString(strconv.Quote(v.String()))
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("[]")
			return
		}
		if v.Len() > 0 {
			k, ok := e.enter(v, v.Len())
			if !ok {
				return
			}
			defer delete(e.visited, k)
		}
		fallthrough
	case reflect.Array:
		b.WriteByte('[')
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			e.value(v.Index(i), depth+1)
		}
		b.WriteByte(']')
	case reflect.Map:
		if v.Len() == 0 {
			b.WriteString("{}")
			return
		}
		k, ok := e.enter(v, 0)
		if !ok {
			return
		}
		defer delete(e.visited, k)
		type kv struct{ k, v string }
		pairs := make([]kv, 0, v.Len())
		it := v.MapRange()
		for it.Next() {
			pairs = append(pairs, kv{e.sub(it.Key(), depth+1), e.sub(it.Value(), depth+1)})
		}
		slices.SortFunc(pairs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
		b.WriteByte('{')
		for i, p := range pairs {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p.k)
			b.WriteString(": ")
			b.WriteString(p.v)
		}
		b.WriteByte('}')
	case reflect.Struct:
		t := v.Type()
		b.WriteString(t.String())
		b.WriteByte('{')
		for i := range v.NumField() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(t.Field(i).Name)
			b.WriteString(": ")
			e.value(v.Field(i), depth+1)
		}
		b.WriteByte('}')
	case reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		k, ok := e.enter(v, 0)
		if !ok {
			return
		}
		b.WriteByte('&')
		e.value(v.Elem(), depth+1)
		delete(e.visited, k)
	case reflect.Interface:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		e.value(v.Elem(), depth+1)
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString(v.Type().String())
		b.WriteString("@0x")
		b.WriteString(strconv.FormatUint(uint64(v.Pointer()), 16))
	default:
		b.WriteString(v.Type().String())
	}
}

func (e *encoder) sub(v reflect.Value, depth int) string {
	var b strings.Builder
	sub := encoder{b: &b, visited: e.visited}
	sub.value(v, depth)
	return b.String()
}

func (e *encoder) float(f float64) {
	switch {
	case math.IsNaN(f):
		e.b.WriteString("NaN")
	case f == 0:
		e.b.WriteString("0") // -0 equals 0
	default:
		e.b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	}
}
