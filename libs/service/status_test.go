package service

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/eventreg/eventreg/libs/migrations"
)

func TestMigrateStatusNamesWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		st   migrations.Status
		want string
	}{
		{migrations.Status{Version: 3, Latest: 3, Oldest: 3}, "version 3 of 3, dirty=false, current=true"},
		{migrations.Status{Version: 3, Latest: 3, Oldest: 3, Dirty: true}, "migration 3 failed half-way"},
		{migrations.Status{Version: 3, Latest: 3, Oldest: 3, Dirty: true}, "`migrate force 3`"},
		{migrations.Status{Version: 4, Latest: 3, Oldest: 3}, "ahead of this binary"},
		{migrations.Status{Version: 2, Latest: 3, Oldest: 3}, "run `migrate up`"},
		{migrations.Status{Version: 2, Latest: 3, Oldest: 2}, "runs on version 2 and newer"},
	} {
		if got := describeStatus(tc.st); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q lacks %q", tc.st, got, tc.want)
		}
	}
}

func TestMigrateForceRefusesBadVersions(t *testing.T) {
	set := migrations.New(fstest.MapFS{"0001_a.up.sql": {Data: []byte("SELECT 1")}, "0001_a.down.sql": {Data: []byte("SELECT 1")}}, ".")
	for _, arg := range []string{"x", "2", "1.5", ""} {
		cmd := MigrateCommand(set, func() (DatabaseConfig, error) {
			t.Fatal("loaded the configuration for a bad VERSION")
			return DatabaseConfig{}, nil
		})
		cmd.SetArgs([]string{"force", "--", arg})
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "VERSION") {
			t.Errorf("force %s: %v", arg, err)
		}
	}
}
