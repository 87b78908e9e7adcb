package webhookapi_test

import (
	"encoding/json"
	"testing"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/authtest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// start runs auth with a fast dispatcher that may reach 127.0.0.1.
func start(t *testing.T) *authtest.Server {
	t.Helper()
	return authtest.Start(t, authtest.Options{Env: map[string]string{
		"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32", "WEBHOOK_POLL_INTERVAL": "20ms", "WEBHOOK_RETRY_BASE": "10ms",
		"WEBHOOK_RETRY_MAX": "50ms", "WEBHOOK_TIMEOUT": "1s", "WEBHOOK_LEASE": "2s",
	}})
}

func jsonBody(v any) []byte { b, _ := json.Marshal(v); return b }
