package clientsecret

import (
	"bytes"
	"testing"
)

func TestHasher(t *testing.T) {
	h := NewHasher([]byte("0123456789abcdef0123456789abcdef"))
	stored := h.Hash("a-long-random-demo-secret-of-at-least-32-chars")
	t.Run("the right secret verifies", func(t *testing.T) {
		if !h.Verify("a-long-random-demo-secret-of-at-least-32-chars", stored) {
			t.Fatal("does not verify")
		}
	})
	t.Run("a different secret does not", func(t *testing.T) {
		if h.Verify("a-long-random-demo-secret-of-at-least-32-charz", stored) {
			t.Fatal("verifies")
		}
	})
	t.Run("the hash depends on the key, so a leaked table alone does not help", func(t *testing.T) {
		other := NewHasher([]byte("ffffffffffffffffffffffffffffffff"))
		if bytes.Equal(other.Hash("x"), h.Hash("x")) || other.Verify("a-long-random-demo-secret-of-at-least-32-chars", stored) {
			t.Fatal("key ignored")
		}
	})
	t.Run("the stored hash does not contain the secret", func(t *testing.T) {
		if bytes.Contains(stored, []byte("a-long")) || len(stored) != 32 {
			t.Fatalf("%x", stored)
		}
	})
}

func TestGenerate(t *testing.T) {
	a, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate()
	if len(a) != 43 || a == b {
		t.Fatalf("generated %q %q", a, b)
	}
	if Check(a) != nil || Check("short") != ErrTooShort {
		t.Fatal("length check wrong")
	}
}
