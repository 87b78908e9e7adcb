package authtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/eventreg/eventreg/libs/authapi"
	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/webhook"
)

// Receipt is one request a Receiver got.
type Receipt struct {
	// ID and Event are its Webhook-Id and Webhook-Event headers.
	ID, Event string
	Header    http.Header
	Body      []byte
	At        time.Time
}

// Receiver is a webhook endpoint on 127.0.0.1 (where the demo service
// apps may send, Clients) that records what it gets.
type Receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []Receipt
	answer func(w http.ResponseWriter, r *http.Request, n int)
}

// NewReceiver starts a receiver until t ends; answer writes the answer to
// the nth request (its body readable again), nil answers 204.
func NewReceiver(t testing.TB, answer func(w http.ResponseWriter, r *http.Request, n int)) *Receiver {
	rc := &Receiver{answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, Receipt{ID: r.Header.Get(webhook.HeaderID), Event: r.Header.Get(webhook.HeaderEvent),
			Header: r.Header.Clone(), Body: body, At: time.Now()})
		n := len(rc.got)
		rc.mu.Unlock()
		if rc.answer == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rc.answer(w, r, n)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// Receipts returns what the receiver got so far.
func (rc *Receiver) Receipts() []Receipt {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Receipt(nil), rc.got...)
}

// Count is how many requests the receiver got.
func (rc *Receiver) Count() int { return len(rc.Receipts()) }

// Last returns the last request the receiver got.
func (rc *Receiver) Last() Receipt {
	got := rc.Receipts()
	if len(got) == 0 {
		return Receipt{}
	}
	return got[len(got)-1]
}

// Event returns an event of type typ about resource, with data, new (a
// fresh id) and happening now.
func Event(typ, resource, data string) authapi.Event {
	return authapi.Event{ID: uuid.NewString(), Type: typ, Source: "test", Resource: resource,
		Data: json.RawMessage(data), OccurredAt: time.Now()}
}

// Eventually polls cond until it holds, failing t when it does not within
// timeout.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	err := testkit.Poll(context.Background(), timeout, func(context.Context) error {
		if cond() {
			return nil
		}
		return errNotYet
	})
	if err != nil {
		t.Fatalf("%s: not within %s", what, timeout)
	}
}

var errNotYet = errors.New("not yet")
