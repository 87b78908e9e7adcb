package webhookapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/authapi"
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

// startManaging is start, the service app's token with webhook:manage, and
// a receiver for it to subscribe.
func startManaging(t *testing.T) (s *authtest.Server, tok string, rc *authtest.Receiver) {
	t.Helper()
	s = start(t)
	return s, s.ServiceToken(t, authtest.ServiceID, authtest.ServiceSecret, "webhook:manage"), authtest.NewReceiver(t, nil)
}

// delivery publishes ev and waits for rc's n-th delivery: it returns that
// request and the bearer token it carried.
func delivery(t *testing.T, s *authtest.Server, rc *authtest.Receiver, ev authapi.Event, n int) (authtest.Receipt, string) {
	t.Helper()
	s.Publish(t, ev)
	authtest.Eventually(t, 10*time.Second, fmt.Sprintf("delivery %d", n), func() bool { return rc.Count() == n })
	req := rc.Last()
	return req, strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
}

func jsonBody(v any) []byte { b, _ := json.Marshal(v); return b }
