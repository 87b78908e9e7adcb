package apireply_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/apierror"
	"github.com/eventreg/eventreg/libs/apireply"
	"github.com/eventreg/eventreg/libs/svcclient"
	"github.com/eventreg/eventreg/libs/usersummary"
)

var (
	errMissing = errors.New("missing")
	errBusy    = errors.New("busy")
)

type fieldError struct{ field string }

func (e *fieldError) Error() string { return "bad " + e.field }

// reply answers err through a Replier with two rules and returns the status,
// the body and what was logged.
func reply(t *testing.T, err error, oauth bool) (int, map[string]any, string) {
	t.Helper()
	gin.SetMode(gin.TestMode)
	var logs bytes.Buffer
	r := apireply.Replier{Log: slog.New(slog.NewTextHandler(&logs, nil)), Rules: []apireply.Rule{
		apireply.Is(errMissing, func() *apierror.Error { return apierror.NotFound("No such thing.") }),
		apireply.Is(errBusy, func() *apierror.Error { return apierror.Unavailable("Thinking") }),
		apireply.As(func(e *fieldError) *apierror.Error {
			return apierror.Validation("Bad.", map[string]string{e.field: "bad"})
		}),
	}}
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest("GET", "/x", nil)
	if oauth {
		r.OAuthError(c, err)
	} else {
		r.Error(c, err)
	}
	var body map[string]any
	if e := json.Unmarshal(w.Body.Bytes(), &body); e != nil {
		t.Fatalf("body %q: %v", w.Body, e)
	}
	return w.Code, body, logs.String()
}

func category(body map[string]any) (string, map[string]any) {
	for k, v := range body["errors"].(map[string]any) {
		return k, v.(map[string]any)
	}
	return "", nil
}

func TestReplierOneErrorPath(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		status   int
		category string
		message  string
		logged   bool
	}{
		{"an API error is sent as it is", fmt.Errorf("wrapped: %w", apierror.Conflict(3, "Taken.")), 409, "logic", "Taken.", false},
		{"a rule matched by errors.Is", fmt.Errorf("get 7: %w", errMissing), 404, "resource", "No such thing.", false},
		{"a rule matched by errors.As", fmt.Errorf("check: %w", &fieldError{"name"}), 400, "validation", "Bad.", false},
		{"a rule's 5xx is logged", errBusy, 503, "server", "Thinking is temporarily unavailable; try again shortly.", true},
		{"another service, named", &svcclient.UnavailableError{Service: "volunteers", Err: io.EOF}, 503, "server",
			"The volunteers service is temporarily unavailable; try again shortly.", true},
		{"the users service behind summaries", &usersummary.UnavailableError{Err: svcclient.ErrUnavailable}, 503, "server",
			"The users service is temporarily unavailable; try again shortly.", true},
		{"a named dependency", apierror.DependencyFailed("The token store", errors.New("redis: i/o timeout")), 503, "server",
			"The token store is temporarily unavailable; try again shortly.", true},
		{"an unreachable database", fmt.Errorf("query: %w", syscall.ECONNREFUSED), 503, "server",
			"The database is temporarily unavailable; try again shortly.", true},
		{"anything else is a 500 with a hash", errors.New("nil map"), 500, "server", "Internal server error.", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body, logs := reply(t, tc.err, false)
			cat, inner := category(body)
			if status != tc.status || cat != tc.category || inner["message"] != tc.message {
				t.Fatalf("got %d %s %v, want %d %s %q", status, cat, inner, tc.status, tc.category, tc.message)
			}
			if got := logs != ""; got != tc.logged {
				t.Fatalf("logged %v (%q), want %v", got, logs, tc.logged)
			}
			if tc.status >= 500 {
				hash, _ := inner["hash"].(string)
				if hash == "" || !strings.Contains(logs, tc.err.Error()) {
					t.Fatalf("a 5xx carries a hash and logs the cause: %v %q", inner, logs)
				}
			}
		})
	}
}

func TestReplierOAuthErrors(t *testing.T) {
	t.Run("an OAuth error is sent as it is", func(t *testing.T) {
		status, body, logs := reply(t, fmt.Errorf("x: %w", apierror.NewOAuth(apierror.OAuthInvalidGrant, "No.")), true)
		if status != 400 || body["error"] != "invalid_grant" || body["error_description"] != "No." || logs != "" {
			t.Fatalf("%d %v %q", status, body, logs)
		}
	})
	t.Run("a failed dependency is temporarily_unavailable naming it", func(t *testing.T) {
		status, body, logs := reply(t, apierror.DependencyFailed("The token store", errors.New("redis down")), true)
		if status != 503 || body["error"] != "temporarily_unavailable" ||
			body["error_description"] != "The token store is temporarily unavailable; try again shortly." || !strings.Contains(logs, "redis down") {
			t.Fatalf("%d %v %q", status, body, logs)
		}
	})
	t.Run("anything else is server_error with a logged hash", func(t *testing.T) {
		status, body, logs := reply(t, errors.New("bug"), true)
		desc, _ := body["error_description"].(string)
		if status != 500 || body["error"] != "server_error" || !strings.Contains(logs, "bug") || !strings.Contains(desc, "(") {
			t.Fatalf("%d %v %q", status, body, logs)
		}
		hash := desc[strings.Index(desc, "(")+1 : strings.Index(desc, ")")]
		if !strings.Contains(logs, hash) {
			t.Fatalf("the hash %q is not in the log %q", hash, logs)
		}
	})
}
