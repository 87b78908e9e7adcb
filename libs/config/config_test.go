package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/config"
)

type sample struct {
	DatabaseURL string        `env:"DATABASE_URL,required"`
	Timeout     time.Duration `env:"TIMEOUT" envDefault:"5s"`
	Port        int           `env:"PORT" envDefault:"8080"`
	Key         string        `env:"KEY"`
}

func (s *sample) Validate() error {
	if s.Key != "" {
		return config.MinLength("KEY", s.Key, 8)
	}
	return nil
}

func TestLoadAppliesDefaults(t *testing.T) {
	cfg, err := config.LoadFrom[sample](map[string]string{"DATABASE_URL": "postgres://x"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Timeout != 5*time.Second || cfg.Port != 8080 || cfg.DatabaseURL != "postgres://x" {
		t.Fatalf("unexpected config %+v", cfg)
	}
}

func TestMissingRequiredVariableIsNamed(t *testing.T) {
	_, err := config.LoadFrom[sample](map[string]string{})
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("want error naming DATABASE_URL, got %v", err)
	}
}

func TestMalformedVariableIsNamed(t *testing.T) {
	_, err := config.LoadFrom[sample](map[string]string{"DATABASE_URL": "x", "TIMEOUT": "soon", "PORT": "eighty"})
	if err == nil {
		t.Fatal("want error")
	}
	for _, name := range []string{"TIMEOUT", "PORT"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func TestValidateRunsAfterParsing(t *testing.T) {
	_, err := config.LoadFrom[sample](map[string]string{"DATABASE_URL": "x", "KEY": "short"})
	if err == nil || !strings.Contains(err.Error(), "KEY must be at least 8") {
		t.Fatalf("want KEY length error, got %v", err)
	}
	if errors.Unwrap(err) == nil {
		t.Fatalf("validation error should wrap the cause: %v", err)
	}
}
