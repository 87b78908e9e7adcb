package webhook

import (
	"strings"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	base, max := time.Second, time.Hour
	t.Run("the ceiling doubles per attempt up to the cap", func(t *testing.T) {
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
		for i, w := range want {
			if got := ceiling(i+1, base, max); got != w {
				t.Errorf("attempt %d: ceiling %s, want %s", i+1, got, w)
			}
		}
		if got := ceiling(40, base, max); got != max {
			t.Errorf("attempt 40: ceiling %s, want the cap", got)
		}
	})
	t.Run("full jitter draws from zero to the ceiling", func(t *testing.T) {
		top := func(n int64) int64 { return n - 1 }
		bottom := func(int64) int64 { return 0 }
		if got := backoff(3, base, max, top); got != 4*time.Second {
			t.Errorf("highest draw %s", got)
		}
		if got := backoff(3, base, max, bottom); got != 0 {
			t.Errorf("lowest draw %s", got)
		}
		for range 1000 {
			if d := Backoff(5, base, max); d < 0 || d > 16*time.Second {
				t.Fatalf("%s outside [0, 16s]", d)
			}
		}
	})
}

func TestBody(t *testing.T) {
	b, err := deliveryBody("user-updated", []byte(" {\"id\" : \"1\",\n \"tags\": [1, 2]} "))
	if err != nil || string(b) != `{"event":"user-updated","data":{"id":"1","tags":[1,2]}}` {
		t.Fatalf("%s %v", b, err)
	}
	if _, err := deliveryBody("user-updated", []byte(`{"id":`)); err == nil {
		t.Fatal("broken data accepted")
	}
}

func TestSnippet(t *testing.T) {
	if got := snippetOf([]byte("  line one\r\n\tline\x00two \xff")); got != "line one line two" {
		t.Fatalf("%q", got)
	}
	long := snippetOf([]byte(strings.Repeat("é", 300)))
	if len(long) > maxErrorSnippet+len("…") {
		t.Fatalf("%d bytes", len(long))
	}
}
