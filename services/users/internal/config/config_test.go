package config_test

import (
	"strings"
	"testing"

	libconfig "github.com/eventreg/eventreg/libs/config"
	"github.com/eventreg/eventreg/services/users/internal/config"
)

func environ() map[string]string {
	return map[string]string{"DATABASE_URL": "postgres://users@db/users", "AUTH_ISSUER": "https://auth.test",
		"AUTH_JWKS_URL": "http://auth:9090/.well-known/jwks.json", "CURSOR_KEY": strings.Repeat("k", 32),
		"CONVENTION_ID": "2026", "VOLUNTEERS_INTERNAL_URL": "http://volunteers:9090",
		"VOLUNTEERS_PUBLIC_URL": "http://volunteers:8080", "REGISTRATIONS_PUBLIC_URL": "http://registrations:8080"}
}

func TestServeConfiguration(t *testing.T) {
	cfg, err := libconfig.LoadFrom[config.Serve](environ())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PublicAddr != ":8080" || cfg.InternalAddr != ":9090" || cfg.TokenAudience != "eventreg-api" || cfg.VolunteersInternalURL != "http://volunteers:9090" ||
		cfg.VolunteersPublicURL != "http://volunteers:8080" || cfg.RegistrationsPublicURL != "http://registrations:8080" {
		t.Fatalf("%+v", cfg)
	}
	for _, c := range []struct{ variable, value string }{
		{"VOLUNTEERS_INTERNAL_URL", "volunteers:9090"},
		{"CURSOR_KEY", "short"},
		{"CONVENTION_ID", ""},
		{"VOLUNTEERS_PUBLIC_URL", ""},
		{"VOLUNTEERS_PUBLIC_URL", "volunteers:8080"},
		{"VOLUNTEERS_PUBLIC_URL", "http://volunteers:8080/api/v0"},
		{"REGISTRATIONS_PUBLIC_URL", ""},
		{"REGISTRATIONS_PUBLIC_URL", "ftp://registrations"},
	} {
		variable, value := c.variable, c.value
		t.Run("a bad "+variable+" ("+value+") is named", func(t *testing.T) {
			env := environ()
			if value == "" {
				delete(env, variable)
			} else {
				env[variable] = value
			}
			if _, err := libconfig.LoadFrom[config.Serve](env); err == nil || !strings.Contains(err.Error(), variable) {
				t.Fatalf("got %v", err)
			}
		})
	}
}
