package resourcetest

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// Refusal is a GET the API must refuse.
type Refusal struct {
	Name, Path, Token string
	Status            int
	// Category is the error category the body must have; Message, when not
	// empty, its message.
	Category, Message string
}

// CheckRefusals runs a subtest per case, named by it, that GETs its path with
// its token and checks the status and the error.
func (e *Env) CheckRefusals(t *testing.T, cases []Refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := e.Get(t, tc.Path, tc.Token)
			if r.Status != tc.Status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.Status, r.Body)
			}
			if msg := r.ErrorMessage(t, tc.Category); tc.Message != "" && msg != tc.Message {
				t.Fatalf("message %q, want %q", msg, tc.Message)
			}
		})
	}
}

// BodyRefusal is a POST body the API must refuse.
type BodyRefusal struct {
	Name, Body, ContentType, Token string
	Status                         int
	Category                       string
}

// CheckBodyRefusals runs a subtest per case, "refuses <name>", that POSTs its
// body to path and checks the status, the error category, and that the users
// service was not called.
func (e *Env) CheckBodyRefusals(t *testing.T, path string, cases []BodyRefusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run("refuses "+tc.Name, func(t *testing.T) {
			e.Users.Reset()
			r := e.Do(t, http.MethodPost, path, tc.Token, tc.ContentType, []byte(tc.Body))
			if r.Status != tc.Status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.Status, r.Body)
			}
			r.ErrorMessage(t, tc.Category)
			if calls := e.Users.Calls(); len(calls) != 0 {
				t.Fatalf("a refused request called the users service: %v", calls)
			}
		})
	}
}

// ExpectUsersUnavailable sends each request and checks that it gets, within
// 2s, a 503 whose server error names the users service, with Retry-After.
func ExpectUsersUnavailable(t *testing.T, sends ...func() Response) {
	t.Helper()
	for _, send := range sends {
		start := time.Now()
		r := send()
		if r.Status != http.StatusServiceUnavailable {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Fatalf("took %v", took)
		}
		if msg := r.ErrorMessage(t, "server"); !strings.Contains(msg, "users service") {
			t.Fatalf("message %q", msg)
		}
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("no Retry-After")
		}
	}
}

// CheckUsersOutages runs check in a subtest while the users double hangs,
// then while it answers 500, then once it is gone (it stays closed).
func (e *Env) CheckUsersOutages(t *testing.T, check func(t *testing.T)) {
	t.Helper()
	t.Run("a users service that hangs gives 503 within the timeout", func(t *testing.T) {
		e.Users.SetDelay(10 * time.Second)
		defer e.Users.SetDelay(0)
		check(t)
	})
	t.Run("a users service answering 500 gives 503", func(t *testing.T) {
		e.Users.SetStatus(http.StatusInternalServerError)
		defer e.Users.SetStatus(0)
		check(t)
	})
	t.Run("a users service that is gone gives 503 at once", func(t *testing.T) {
		e.Users.Close()
		check(t)
	})
}
