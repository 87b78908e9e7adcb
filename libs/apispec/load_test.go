package apispec

import (
	"context"
	"testing"
)

func TestLoadQuick(t *testing.T) {
	if _, err := Load(context.Background()); err != nil {
		t.Fatal(err)
	}
}
