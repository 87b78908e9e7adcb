// Package redisscript runs Lua scripts whose arguments have names: a
// script's ARGV are built from a struct, one field per argument, and the
// script reads each as a local of the field's name, so neither side counts
// positions.
package redisscript

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Script is a Lua script taking the arguments A: a struct whose fields,
// each tagged `lua:"name"`, are strings or integers, and whose last field
// may be a []string (the rest of ARGV, read as a Lua table).
type Script[A any] struct {
	script *redis.Script
	fields []int
	rest   int // index of the []string field, -1 when none
}

// New returns the script body preceded by the bindings of A's fields to
// locals (`local client = ARGV[3]`) and by the helper fields (below). It
// panics when A is not such a struct: a script is built once, at start-up.
//
// fields(key, name...) reads the named fields of a hash into a table:
// `local f = fields(KEYS[1], 'cur', 'client')` then `f.cur`, `f.client`
// (false when absent).
func New[A any](body string) *Script[A] {
	t := reflect.TypeFor[A]()
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("redisscript: %s is not a struct", t))
	}
	s := &Script[A]{rest: -1}
	var pre strings.Builder
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("lua")
		if name == "" {
			panic(fmt.Sprintf("redisscript: %s.%s has no lua tag", t, f.Name))
		}
		if f.Type == reflect.TypeFor[[]string]() {
			if i != t.NumField()-1 {
				panic(fmt.Sprintf("redisscript: %s.%s: only the last field may be a list", t, f.Name))
			}
			s.rest = i
			fmt.Fprintf(&pre, "local %s = {unpack(ARGV, %d)}\n", name, len(s.fields)+1)
			continue
		}
		switch f.Type.Kind() {
		case reflect.String, reflect.Int, reflect.Int64:
		default:
			panic(fmt.Sprintf("redisscript: %s.%s: a %s cannot be an argument", t, f.Name, f.Type))
		}
		s.fields = append(s.fields, i)
		fmt.Fprintf(&pre, "local %s = ARGV[%d]\n", name, len(s.fields))
	}
	s.script = redis.NewScript(pre.String() + fieldsLib + body)
	return s
}

// fieldsLib reads named fields of a hash into a table.
const fieldsLib = `local function fields(key, ...)
  local names = {...}
  local values = redis.call('HMGET', key, unpack(names))
  local out = {}
  for i, n in ipairs(names) do out[n] = values[i] end
  return out
end
`

// Run runs the script on keys with the arguments a.
func (s *Script[A]) Run(ctx context.Context, c redis.Scripter, keys []string, a A) *redis.Cmd {
	return s.script.Run(ctx, c, keys, s.argv(a)...)
}

// argv is a's fields in order, the list's items last.
func (s *Script[A]) argv(a A) []any {
	v := reflect.ValueOf(a)
	out := make([]any, 0, len(s.fields))
	for _, i := range s.fields {
		out = append(out, v.Field(i).Interface())
	}
	if s.rest >= 0 {
		for _, item := range v.Field(s.rest).Interface().([]string) {
			out = append(out, item)
		}
	}
	return out
}
