// Package canon writes the canonical text of a Go value: how effects
// compare dependency values across executions (and across a checkpoint),
// and how the runtime writes a variable's value.
package canon

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
