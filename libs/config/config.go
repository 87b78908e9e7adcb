// Package config loads a service's configuration from environment variables and
// validates it at start, naming the variable that is missing or wrong.
package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/caarlos0/env/v11"
)

// Validator is implemented by configuration structs with rules beyond types
// and presence (lengths, URLs, ranges).
type Validator interface {
	Validate() error
}

// Load fills a T from the process environment: fields are tagged
// `env:"NAME"` with `envDefault:"..."` and `required` options (see
// github.com/caarlos0/env). Every problem is reported, each naming its variable.
func Load[T any]() (T, error) {
	return LoadFrom[T](nil)
}

// LoadFrom is Load reading from the given map instead of the process
// environment when environ is not nil (used by tests).
func LoadFrom[T any](environ map[string]string) (T, error) {
	var cfg T
	opts := env.Options{}
	if environ != nil {
		opts.Environment = environ
	}
	if err := env.ParseWithOptions(&cfg, opts); err != nil {
		return cfg, fmt.Errorf("configuration: %s", describe(err, envNames(reflect.TypeOf(cfg))))
	}
	if v, ok := any(&cfg).(Validator); ok {
		if err := v.Validate(); err != nil {
			return cfg, fmt.Errorf("configuration: %w", err)
		}
	}
	return cfg, nil
}

// describe turns the library's aggregate error into one message per variable,
// naming the variable rather than the Go field.
func describe(err error, names map[string]string) string {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return err.Error()
	}
	parts := make([]string, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			name := names[pe.Name]
			if name == "" {
				name = pe.Name
			}
			parts = append(parts, fmt.Sprintf("%s is malformed: %v", name, pe.Err))
			continue
		}
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// envNames maps Go field names to their variable names, through nested structs.
func envNames(t reflect.Type) map[string]string {
	names := map[string]string{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if tag := f.Tag.Get("env"); tag != "" {
				names[f.Name] = strings.Split(tag, ",")[0]
			} else {
				walk(f.Type)
			}
		}
	}
	walk(t)
	return names
}

// MinLength reports an error naming variable name when value is shorter than n.
func MinLength(name, value string, n int) error {
	if len(value) < n {
		return fmt.Errorf("%s must be at least %d characters long (got %d)", name, n, len(value))
	}
	return nil
}
