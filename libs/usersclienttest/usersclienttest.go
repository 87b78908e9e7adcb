// Package usersclienttest is a test double of the users service's internal summaries endpoint (POST /internal/users/summaries) that counts its calls, can be taken down or slowed, and records the trace context it receives.
package usersclienttest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/usersclient"
)

// Server answers summaries for the users it holds; unknown ids are absent,
// as the real endpoint does.
type Server struct {
	// URL is the base URL to give usersclient.NewClient.
	URL string

	srv   *httptest.Server
	mu    sync.Mutex
	users map[int64]usersclient.UserSummary
	calls [][]int64
	trace []string
	delay time.Duration
	fail  int
	all   bool
}

// New starts the double with users; it stops when t ends.
func New(t testing.TB, users ...usersclient.UserSummary) *Server {
	t.Helper()
	s := &Server{users: map[int64]usersclient.UserSummary{}}
	s.Add(users...)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Add stores more users.
func (s *Server) Add(users ...usersclient.UserSummary) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range users {
		id, err := strconv.ParseInt(u.ID, 10, 64)
		if err != nil {
			panic("usersclienttest: user id " + u.ID + " is not a number")
		}
		s.users[id] = u
	}
}

// User returns a plausible summary for id.
func User(id int64) usersclient.UserSummary {
	n := strconv.FormatInt(id, 10)
	phone := "+1555" + n
	return usersclient.UserSummary{ID: n, FirstName: "First" + n, LastName: "Last" + n, Username: "user" + n,
		Phone: &phone, Email: "user" + n + "@example.org"}
}

// Calls returns the ids of every call received, in order.
func (s *Server) Calls() [][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Traceparents returns the traceparent header of every call ("" when absent).
func (s *Server) Traceparents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.trace)
}

// Reset forgets the calls recorded so far.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls, s.trace = nil, nil
}

// SetDelay makes every answer wait d (to exercise client timeouts).
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// SetStatus makes every answer fail with status (0 restores normal answers).
func (s *Server) SetStatus(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = status
}

// Close stops the server: calls then fail to connect, as when users is down.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != usersclient.PathSummaries {
		http.Error(w, `{"errors":{"resource":{"message":"No such endpoint."}}}`, http.StatusNotFound)
		return
	}
	var req usersclient.SummariesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.IDs) > usersclient.MaxSummaryIDs {
		http.Error(w, `{"errors":{"validation":{"message":"bad request"}}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, req.IDs)
	s.trace = append(s.trace, r.Header.Get("traceparent"))
	delay, fail := s.delay, s.fail
	resp := usersclient.SummariesResponse{Data: []usersclient.UserSummary{}}
	for _, id := range req.IDs {
		if u, ok := s.users[id]; ok {
			resp.Data = append(resp.Data, u)
		} else if s.all {
			resp.Data = append(resp.Data, User(id))
		}
	}
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if fail != 0 {
		http.Error(w, `{"errors":{"server":{"message":"failing on purpose"}}}`, fail)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

// Remove forgets users, as if they were deleted.
func (s *Server) Remove(ids ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.users, id)
	}
}

// KnowEveryone makes every id a user (User(id)), for benchmarks over
// millions of generated records.
func (s *Server) KnowEveryone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = true
}
