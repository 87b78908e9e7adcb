package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDevEnvPassesRedisClusterOn: `REDIS_CLUSTER=true make run` reaches every
// service (REDIS_URL itself becomes the stack's Redis, started by nobody).
func TestDevEnvPassesRedisClusterOn(t *testing.T) {
	t.Setenv("REDIS_CLUSTER", "true")
	if got := devEnv()["REDIS_CLUSTER"]; got != "true" {
		t.Fatalf("REDIS_CLUSTER=%q", got)
	}
}

// TestSecretsGainAnInternalAuthKey: a .run/secrets.json from before service
// tokens keeps its keys (the databases hold what they encrypted) and gains
// an INTERNAL_AUTH_KEY, kept for the next `make run`.
func TestSecretsGainAnInternalAuthKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	old := `{"keyEncryptionKey":"kek","clientSecretKey":"csk","cursorKey":"ck"}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := loadSecrets(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.KeyEncryptionKey != "kek" || s.ClientSecretKey != "csk" || s.CursorKey != "ck" || len(s.InternalAuthKey) < 32 {
		t.Fatalf("loaded %+v", s)
	}
	again, err := loadSecrets(path)
	if err != nil || again != s {
		t.Fatalf("the next run loaded %+v (%v), want %+v", again, err, s)
	}
}
