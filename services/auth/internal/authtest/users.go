package authtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/servicetoken"
	"github.com/eventreg/eventreg/libs/usersclient"
)

// User is an account of the users double.
type User struct {
	ID                        int64
	Username, Email, Password string
	Permissions               []string
}

// Alice holds every sensitive permission; Bob none.
var (
	Alice = User{ID: 1001, Username: "alice", Email: "alice@example.org", Password: "correct horse battery staple",
		Permissions: []string{"system:login", "user:read", "user:roles:update", "volunteer:read", "registration:read"}}
	Bob = User{ID: 1002, Username: "bob", Email: "bob@example.org", Password: "bob demo password 2026", Permissions: []string{"system:login"}}
)

// UsersDouble is a test double of the users service's internal API
// (libs/usersclient: credential verification, accounts and permissions), standing in for
// the real users service, which is another module. It compares passwords in
// plain text; the real service checks argon2id hashes.
type UsersDouble struct {
	*httptest.Server
	mu        sync.Mutex
	users     []User
	down      bool
	misrouted bool
	// Verifications counts Verify calls.
	Verifications int
}

// NewUsersDouble starts the double with users.
func NewUsersDouble(t testing.TB, users ...User) *UsersDouble {
	d := &UsersDouble{users: users}
	d.Server = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.Close)
	return d
}

// VerifyCalls returns how many credential checks the double has answered.
func (d *UsersDouble) VerifyCalls() int { d.mu.Lock(); defer d.mu.Unlock(); return d.Verifications }

// SetDown makes the double answer 503 (or recover).
func (d *UsersDouble) SetDown(down bool) { d.mu.Lock(); d.down = down; d.mu.Unlock() }

// SetMisrouted makes the double answer every call as a server that is not
// the users service would: a bare 404 (or recover). It is what
// USERS_INTERNAL_URL naming the wrong host or path looks like.
func (d *UsersDouble) SetMisrouted(m bool) { d.mu.Lock(); d.misrouted = m; d.mu.Unlock() }

// SetPermissions replaces a user's permissions.
func (d *UsersDouble) SetPermissions(id int64, perms []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.users {
		if d.users[i].ID == id {
			d.users[i].Permissions = perms
		}
	}
}

// Remove deletes a user: the double then answers 404 for it.
func (d *UsersDouble) Remove(id int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range d.users {
		if d.users[i].ID == id {
			d.users = append(d.users[:i], d.users[i+1:]...)
			return
		}
	}
}

func (d *UsersDouble) verifyToken(tok string) error {
	_, err := servicetoken.NewVerifier(resourcetest.InternalAuth, "users").Verify(tok)
	return err
}

func (d *UsersDouble) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.down {
		http.Error(w, `{"errors":{"server":{"message":"down"}}}`, http.StatusServiceUnavailable)
		return
	}
	if d.misrouted {
		http.Error(w, `{"errors":{"resource":{"message":"No such endpoint."}}}`, http.StatusNotFound)
		return
	}
	// As the users service's internal listener: only auth's service token.
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || d.verifyToken(tok) != nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		http.Error(w, `{"errors":{"authentication":{"code":2000,"message":"Invalid token."}}}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodPost && r.URL.Path == usersclient.PathVerify:
		d.Verifications++
		var req usersclient.VerifyRequest
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for _, u := range d.users {
			if (strings.EqualFold(u.Username, req.Username) || strings.EqualFold(u.Email, req.Username)) && u.Password == req.Password {
				_ = json.NewEncoder(w).Encode(usersclient.VerifyResponse{UserID: u.ID})
				return
			}
		}
		w.Header().Set(usersclient.AnswerHeader, usersclient.AnswerBadCredentials)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"errors":{"authentication":{"message":"Invalid credentials."}}}`))
	case r.Method == http.MethodPost && r.URL.Path == usersclient.PathAccount:
		var req usersclient.AccountRequest
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		login := strings.TrimSpace(req.Username)
		for _, u := range d.users {
			if strings.EqualFold(u.Username, login) || strings.EqualFold(u.Email, login) {
				_ = json.NewEncoder(w).Encode(usersclient.AccountResponse{UserID: u.ID})
				return
			}
		}
		w.Header().Set(usersclient.AnswerHeader, usersclient.AnswerNoSuchUser)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":{"resource":{"message":"No such user."}}}`))
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/internal/users/") && strings.HasSuffix(r.URL.Path, "/permissions"):
		id, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/internal/users/"), "/permissions"), 10, 64)
		for _, u := range d.users {
			if u.ID == id {
				_ = json.NewEncoder(w).Encode(usersclient.PermissionsResponse{UserID: id, Permissions: u.Permissions})
				return
			}
		}
		w.Header().Set(usersclient.AnswerHeader, usersclient.AnswerNoSuchUser)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errors":{"resource":{"message":"No such user."}}}`))
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}
