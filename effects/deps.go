package effects

import (
	"slices"
	"strconv"

	"github.com/reprompt/reprompt/internal/canon"
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
		vals[i] = canon.Encode(v)
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

// encodesAs reports whether canon.Encode(v) == enc.
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
	return canon.Encode(v) == enc
}
