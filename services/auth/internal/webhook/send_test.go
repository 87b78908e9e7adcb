package webhook

import (
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"
)

func TestTransportProblem(t *testing.T) {
	banner := &url.Error{Op: "Post", URL: "https://x", Err: errors.New(`net/http: malformed HTTP response "SSH-2.0-OpenSSH_9.6"`)}
	refused := &url.Error{Op: "Post", URL: "https://x", Err: fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)}
	t.Run("a public peer's words are shown", func(t *testing.T) {
		if r := transportProblem(banner, true); r.problem != `net/http: malformed HTTP response "SSH-2.0-OpenSSH_9.6"` {
			t.Fatalf("%q", r.problem)
		}
	})
	t.Run("a private peer's are not, only the kind of failure", func(t *testing.T) {
		if r := transportProblem(banner, false); r.problem != "no HTTP answer" {
			t.Fatalf("%q", r.problem)
		}
		if r := transportProblem(refused, false); r.problem != "connection refused" {
			t.Fatalf("%q", r.problem)
		}
	})
}
