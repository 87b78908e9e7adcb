package outbox_test

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/eventreg/eventreg/libs/outbox"
)

// TestMigrationSetTakesTheOutboxAsVersion2: a producing service's set lists
// the outbox's migration as version 2, between the service's own, and
// declares the oldest schema it was given.
func TestMigrationSetTakesTheOutboxAsVersion2(t *testing.T) {
	own := fstest.MapFS{
		"0001_things.up.sql":   {Data: []byte("CREATE TABLE things (id bigint PRIMARY KEY);")},
		"0001_things.down.sql": {Data: []byte("DROP TABLE things;")},
		"0003_more.up.sql":     {Data: []byte("ALTER TABLE things ADD COLUMN name text;")},
		"0003_more.down.sql":   {Data: []byte("ALTER TABLE things DROP COLUMN name;")},
	}
	set := outbox.MigrationSet(own, 3)
	names, err := set.Names()
	if diff := cmp.Diff(map[uint]string{1: "things", 2: "outbox", 3: "more"}, names); err != nil || diff != "" {
		t.Fatalf("names (-want +got):\n%s%v", diff, err)
	}
	if set.Declared() != 3 {
		t.Fatalf("declares %d", set.Declared())
	}
}
