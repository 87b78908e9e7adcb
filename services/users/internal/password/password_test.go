package password_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/eventreg/eventreg/services/users/internal/password"
)

func TestHashThenVerify(t *testing.T) {
	h, err := password.Hash("correct horse battery staple", password.Default)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("not a PHC argon2id string: %s", h)
	}
	t.Run("the right password matches", func(t *testing.T) {
		if ok, err := password.Verify("correct horse battery staple", h); err != nil || !ok {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	})
	t.Run("a wrong password does not", func(t *testing.T) {
		if ok, err := password.Verify("correct horse battery stapler", h); err != nil || ok {
			t.Fatalf("ok=%v err=%v", ok, err)
		}
	})
	t.Run("two hashes of one password differ by salt", func(t *testing.T) {
		h2, _ := password.Hash("correct horse battery staple", password.Default)
		if h2 == h {
			t.Fatal("same hash twice")
		}
	})
}

func TestVerifyRefusesMalformedAndHostileHashes(t *testing.T) {
	for name, enc := range map[string]string{
		"empty":           "",
		"bcrypt":          "$2a$10$abcdefghijklmnopqrstuu",
		"argon2i":         "$argon2i$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"wrong version":   "$argon2id$v=16$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"huge memory":     "$argon2id$v=19$m=99999999,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"huge time":       "$argon2id$v=19$m=19456,t=1000,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA",
		"bad base64 salt": "$argon2id$v=19$m=19456,t=2,p=1$!!!$aGFzaGhhc2hoYXNoaGFzaA",
	} {
		t.Run(name, func(t *testing.T) {
			if ok, err := password.Verify("whatever1", enc); err == nil || ok {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
		})
	}
}

func TestCheckTakesAsLongForUnknownUsers(t *testing.T) {
	v, err := password.NewHasher(password.Default, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	h, err := v.Hash(ctx, "a good password")
	if err != nil {
		t.Fatal(err)
	}
	check := func(p, encoded string) bool {
		ok, err := v.Check(ctx, p, encoded)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !check("a good password", h) || check("a bad password", h) || check("a good password", "") || check("a good password", "$argon2id$bad") {
		t.Fatal("wrong answers")
	}
	// The dummy path must do the argon2 work: it takes a comparable time.
	time1 := timeIt(func() { check("a bad password", h) })
	time2 := timeIt(func() { check("a bad password", "") })
	if time2 < time1/4 {
		t.Fatalf("unknown user answered in %v, known in %v", time2, time1)
	}
	t.Logf("verify: known %v, unknown %v", time1, time2)
}

func timeIt(f func()) time.Duration {
	best := time.Hour
	for range 3 {
		start := time.Now()
		f()
		if d := time.Since(start); d < best {
			best = d
		}
	}
	return best
}

func TestCheckNewPassword(t *testing.T) {
	for p, ok := range map[string]bool{"short": false, "long enough": true, strings.Repeat("x", 1025): false, "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8": false} {
		if err := password.Check(p); (err == nil) != ok {
			t.Errorf("Check(%.10q) = %v", p, err)
		}
	}
}
