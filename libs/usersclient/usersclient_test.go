package usersclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/eventreg/eventreg/libs/svcclient"
	"github.com/eventreg/eventreg/libs/usersclient"
)

// A double of the users internal API, enough to check the client's encoding.
func double(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /internal/users/summaries", func(w http.ResponseWriter, r *http.Request) {
		var req usersclient.SummariesRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		var resp usersclient.SummariesResponse
		for _, id := range req.IDs {
			if id < 2000 {
				resp.Data = append(resp.Data, usersclient.UserSummary{ID: strconv.FormatInt(id, 10), Username: "u" + strconv.FormatInt(id, 10)})
			}
		}
		_ = json.NewEncoder(w).Encode(resp)
	})
	mux.HandleFunc("POST /internal/credentials/verify", func(w http.ResponseWriter, r *http.Request) {
		var req usersclient.VerifyRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Username == "alice" && req.Password == "pw" {
			_ = json.NewEncoder(w).Encode(usersclient.VerifyResponse{UserID: 1001})
			return
		}
		w.Header().Set(usersclient.AnswerHeader, usersclient.AnswerBadCredentials)
		w.WriteHeader(401)
	})
	mux.HandleFunc("POST /internal/credentials/account", func(w http.ResponseWriter, r *http.Request) {
		var req usersclient.AccountRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Username != "alice@example.org" {
			w.Header().Set(usersclient.AnswerHeader, usersclient.AnswerNoSuchUser)
			w.WriteHeader(404)
			return
		}
		_ = json.NewEncoder(w).Encode(usersclient.AccountResponse{UserID: 1001})
	})
	mux.HandleFunc("GET /internal/users/{id}/permissions", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") != "1001" {
			w.Header().Set(usersclient.AnswerHeader, usersclient.AnswerNoSuchUser)
			w.WriteHeader(404)
			return
		}
		_ = json.NewEncoder(w).Encode(usersclient.PermissionsResponse{UserID: 1001, Permissions: []string{"user:read"}})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestClient(t *testing.T) {
	c := usersclient.NewClient(double(t).URL, time.Second, nil)
	ctx := context.Background()
	got, err := c.Summaries(ctx, []int64{1001, 5000})
	if err != nil || len(got) != 1 || got[1001].Username != "u1001" {
		t.Fatalf("summaries %v %v", got, err)
	}
	if _, err := c.Summaries(ctx, make([]int64, 101)); err == nil {
		t.Fatal("101 ids accepted")
	}
	if id, err := c.Verify(ctx, "alice", "pw"); err != nil || id != 1001 {
		t.Fatalf("verify %d %v", id, err)
	}
	if _, err := c.Verify(ctx, "alice", "nope"); !errors.Is(err, usersclient.ErrBadCredentials) {
		t.Fatalf("bad password: %v", err)
	}
	if id, err := c.Account(ctx, "alice@example.org"); err != nil || id != 1001 {
		t.Fatalf("account %d %v", id, err)
	}
	if _, err := c.Account(ctx, "mallory"); !errors.Is(err, usersclient.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
	if p, err := c.Permissions(ctx, 1001); err != nil || len(p) != 1 {
		t.Fatalf("permissions %v %v", p, err)
	}
	if _, err := c.Permissions(ctx, 7); !errors.Is(err, usersclient.ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}
	down := usersclient.NewClient("http://127.0.0.1:1", time.Second, nil)
	if _, err := down.Summaries(ctx, []int64{1}); !errors.Is(err, svcclient.ErrUnavailable) {
		t.Fatalf("down: %v", err)
	}
}

// A 404 or 401 that does not carry the users service's mark comes from
// something else at USERS_INTERNAL_URL (a wrong host or path, a proxy): it
// is the dependency failing, never "no such user" or "wrong password".
func TestAnswersWithoutTheMarkAreUnavailable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == usersclient.PathVerify {
			http.Error(w, `{"errors":{"authentication":{"message":"Unauthorized."}}}`, http.StatusUnauthorized)
			return
		}
		http.Error(w, `{"errors":{"resource":{"message":"No such endpoint."}}}`, http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	c := usersclient.NewClient(srv.URL, time.Second, nil)
	ctx := context.Background()
	if _, err := c.Permissions(ctx, 1001); !errors.Is(err, svcclient.ErrUnavailable) {
		t.Errorf("Permissions: %v; want unavailable", err)
	}
	if _, err := c.Account(ctx, "alice"); !errors.Is(err, svcclient.ErrUnavailable) {
		t.Errorf("Account: %v; want unavailable", err)
	}
	if _, err := c.Verify(ctx, "alice", "pw"); !errors.Is(err, svcclient.ErrUnavailable) {
		t.Errorf("Verify: %v; want unavailable", err)
	}
}
