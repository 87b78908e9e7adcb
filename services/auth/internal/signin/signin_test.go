package signin_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/auth/internal/session"
	"github.com/eventreg/eventreg/services/auth/internal/signin"
)

const addr = "192.0.2.1"

func attempt(login, password string) signin.Attempt {
	return signin.Attempt{Login: login, Password: password, Address: addr}
}

func TestSignInCountsBeforeVerifying(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		known bool
		want  []string
	}{
		{"from a new address: account and address, address, then the account's own budget, then the password", false, []string{
			"count account-address 192.0.2.1|login:alice", "count address 192.0.2.1", "known? login:alice|192.0.2.1",
			"count account login:alice", "verify alice"}},
		{"from an address the account signed in from: the account's own budget is spared", true, []string{
			"count account-address 192.0.2.1|login:alice", "count address 192.0.2.1", "known? login:alice|192.0.2.1", "verify alice"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(5, 20)
			w.known.keys["login:alice|"+addr] = tc.known
			if _, err := w.svc.SignIn(ctx, attempt("alice", "wrong")); !errors.Is(err, signin.ErrBadCredentials) {
				t.Fatalf("err %v", err)
			}
			if !slices.Equal(w.trail.calls, tc.want) {
				t.Fatalf("calls\n%s\nwant\n%s", strings.Join(w.trail.calls, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestSignInRefusesOverALimit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// spend uses up an allowance before the attempt.
		spend func(w *world)
	}{
		{"per account and address", func(w *world) { w.accountAddress.used[addr+"|login:alice"] = 5 }},
		{"per address, across accounts", func(w *world) { w.address.used[addr] = 20 }},
		{"per account from a new address", func(w *world) { w.account.used["login:alice"] = 5 }},
	} {
		t.Run(tc.name+": paused, the password unchecked, nothing left counted by the attempt", func(t *testing.T) {
			w := newWorld(5, 20)
			tc.spend(w)
			before := map[string]int{"aa": w.accountAddress.used[addr+"|login:alice"], "a": w.address.used[addr], "acc": w.account.used["login:alice"]}
			_, err := w.svc.SignIn(ctx, attempt("alice", "right"))
			var paused *signin.PausedError
			if !errors.As(err, &paused) || paused.Wait <= 0 {
				t.Fatalf("err %v", err)
			}
			if slices.Contains(w.trail.calls, "verify alice") {
				t.Fatalf("the password was checked: %v", w.trail.calls)
			}
			after := map[string]int{"aa": w.accountAddress.used[addr+"|login:alice"], "a": w.address.used[addr], "acc": w.account.used["login:alice"]}
			for k := range before {
				if before[k] != after[k] {
					t.Fatalf("counts before %v, after %v", before, after)
				}
			}
		})
	}
}

func TestSignInRefund(t *testing.T) {
	ctx := context.Background()
	t.Run("a successful sign-in gives back every attempt it counted", func(t *testing.T) {
		w := newWorld(5, 20)
		if _, err := w.svc.SignIn(ctx, attempt("alice", "right")); err != nil {
			t.Fatal(err)
		}
		if n := w.accountAddress.used[addr+"|login:alice"] + w.address.used[addr] + w.account.used["login:alice"]; n != 0 {
			t.Fatalf("%d attempts still counted: %v", n, w.trail.calls)
		}
	})
	t.Run("a wrong guess stays counted in every budget", func(t *testing.T) {
		w := newWorld(5, 20)
		_, _ = w.svc.SignIn(ctx, attempt("alice", "wrong"))
		if w.accountAddress.used[addr+"|login:alice"] != 1 || w.address.used[addr] != 1 || w.account.used["login:alice"] != 1 {
			t.Fatalf("%v", w.trail.calls)
		}
	})
	t.Run("the users service down is no wrong guess: refunded, and not bad credentials", func(t *testing.T) {
		w := newWorld(5, 20)
		w.users.down = true
		_, err := w.svc.SignIn(ctx, attempt("alice", "right"))
		if err == nil || errors.Is(err, signin.ErrBadCredentials) {
			t.Fatalf("err %v", err)
		}
		if n := w.accountAddress.used[addr+"|login:alice"] + w.address.used[addr] + w.account.used["login:alice"]; n != 0 {
			t.Fatalf("%d attempts still counted", n)
		}
	})
	t.Run("the throttle's store down is an error, and the password is not checked", func(t *testing.T) {
		w := newWorld(5, 20)
		w.address.err = errors.New("redis down")
		_, err := w.svc.SignIn(ctx, attempt("alice", "right"))
		if err == nil || errors.Is(err, signin.ErrBadCredentials) || slices.Contains(w.trail.calls, "verify alice") {
			t.Fatalf("err %v, calls %v", err, w.trail.calls)
		}
		if w.accountAddress.used[addr+"|login:alice"] != 0 {
			t.Fatal("the first count was not given back")
		}
	})
}

func TestSignInIdentifier(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, login, key string }{
		{"spaces around are trimmed", "  alice ", "login:alice"},
		{"the key is lowercased", "Alice", "login:alice"},
		{"an email counts under itself, not under the account it names", "alice@example.org", "login:alice@example.org"},
		{"an unknown identifier counts like a known one", "nobody", "login:nobody"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(5, 20)
			_, _ = w.svc.SignIn(ctx, attempt(tc.login, "wrong"))
			if w.account.used[tc.key] != 1 {
				t.Fatalf("not counted under %s: %v", tc.key, w.trail.calls)
			}
		})
	}
	for _, tc := range []struct{ name, login, password string }{
		{"an empty username", " ", "x"},
		{"an empty password", "alice", ""},
		{"a username over 320 characters", strings.Repeat("a", 321), "x"},
		{"a password over 1024 characters", "alice", strings.Repeat("p", 1025)},
	} {
		t.Run(tc.name+" is bad credentials, counted nowhere", func(t *testing.T) {
			w := newWorld(5, 20)
			if _, err := w.svc.SignIn(ctx, attempt(tc.login, tc.password)); !errors.Is(err, signin.ErrBadCredentials) {
				t.Fatalf("err %v", err)
			}
			if len(w.trail.calls) != 0 {
				t.Fatalf("calls %v", w.trail.calls)
			}
		})
	}
}

func TestSignInStartsASession(t *testing.T) {
	ctx := context.Background()
	w := newWorld(5, 20)
	w.sessions.byID["old"] = session.Session{ID: "old", UserID: 7}
	a := attempt("alice", "right")
	a.Replaces = "old"
	sess, err := w.svc.SignIn(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a session of the user, the one before ended", func(t *testing.T) {
		if sess.UserID != 7 || sess.ID == "" || !slices.Contains(w.trail.calls, "delete session old") {
			t.Fatalf("%+v %v", sess, w.trail.calls)
		}
		if _, ok := w.sessions.byID["old"]; ok {
			t.Fatal("the old session lives")
		}
	})
	t.Run("the address is remembered as the account's", func(t *testing.T) {
		if !w.known.keys["login:alice|"+addr] {
			t.Fatalf("%v", w.known.keys)
		}
	})
	t.Run("Current finds it, and nothing for no id or an ended one", func(t *testing.T) {
		got, err := w.svc.Current(ctx, sess.ID)
		if err != nil || got == nil || got.ID != sess.ID {
			t.Fatalf("%v %v", got, err)
		}
		for _, id := range []string{"", "old"} {
			if got, err := w.svc.Current(ctx, id); err != nil || got != nil {
				t.Fatalf("%q: %v %v", id, got, err)
			}
		}
	})
}

func TestSignInSlowsWrongGuessesPastHalfTheAllowance(t *testing.T) {
	// FailureDelay is an hour: a slowed answer waits until the context
	// ends, an answer that is not slowed returns at once.
	for _, tc := range []struct {
		name      string
		spent     int
		wantSlow  bool
		timeoutMs int
	}{
		{"the first wrong guesses are answered at once", 0, false, 5000},
		{"past half of the account's allowance they are slowed", 3, true, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(6, 100)
			w.svc.FailureDelay = time.Hour
			w.accountAddress.used[addr+"|login:alice"] = tc.spent
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(tc.timeoutMs)*time.Millisecond)
			defer cancel()
			if _, err := w.svc.SignIn(ctx, attempt("alice", "wrong")); !errors.Is(err, signin.ErrBadCredentials) {
				t.Fatalf("err %v", err)
			}
			if slowed := ctx.Err() != nil; slowed != tc.wantSlow {
				t.Fatalf("slowed %v, want %v", slowed, tc.wantSlow)
			}
		})
	}
}
