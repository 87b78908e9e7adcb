// Package dataset makes sure the benchmark databases hold the large synthetic data sets, generating (with the services' own COPY-based `generate` commands) only what is missing, so that runs reuse them.
package dataset

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/eventreg/eventreg/e2e/stack"
)

// GeneratedUsersFrom is the first id `users generate` gives a user (far above
// the fixtures' ids); registrations and volunteers are generated for the
// generated users.
const GeneratedUsersFrom = 10_000_001

// Scale is the size of a data set.
type Scale struct {
	Name                                    string
	Users, Roles, Registrations, Volunteers int64
	Departments                             int64
}

// Scales by name: full is the size, small a quick run.
var Scales = map[string]Scale{
	"full":  {Name: "full", Users: 1_000_000, Roles: 100, Registrations: 1_000_000, Volunteers: 200_000, Departments: 20},
	"small": {Name: "small", Users: 20_000, Roles: 20, Registrations: 20_000, Volunteers: 4_000, Departments: 20},
}

// Counts are the generated rows found in the databases.
type Counts struct {
	Users, Roles, Registrations, Volunteers int64
	// FirstRoleID is the lowest generated role id (0 when none).
	FirstRoleID int64
}

// Ensure generates each missing data set and returns what the databases hold.
// A partly generated set (an interrupted run) is an error: rerun with fresh
// databases.
func Ensure(ctx context.Context, s *stack.Stack, scale Scale, convention string, progress io.Writer) (Counts, error) {
	store, err := Open(ctx, s)
	if err != nil {
		return Counts{}, err
	}
	defer store.Close(ctx)
	have, err := store.Count(ctx, convention)
	if err != nil {
		return have, err
	}
	lastUser := int64(GeneratedUsersFrom) + scale.Users - 1
	steps := []struct {
		name       string
		have, want int64
		service    string
		args       []string
	}{
		{"users", have.Users, scale.Users, "users", []string{"generate", "--users", itoa(scale.Users), "--roles", itoa(scale.Roles)}},
		{"registrations", have.Registrations, scale.Registrations, "registrations", []string{"generate", "--registrations", itoa(scale.Registrations),
			"--users-from", itoa(GeneratedUsersFrom), "--users-to", itoa(lastUser), "--convention", convention}},
		{"volunteers", have.Volunteers, scale.Volunteers, "volunteers", []string{"generate", "--volunteers", itoa(scale.Volunteers),
			"--users-from", itoa(GeneratedUsersFrom), "--users-to", itoa(lastUser), "--departments", itoa(scale.Departments), "--convention", convention}},
	}
	for _, st := range steps {
		switch {
		case st.have == st.want:
			fmt.Fprintf(progress, "dataset: %d %s already generated\n", st.have, st.name)
			continue
		case st.have != 0:
			return have, fmt.Errorf("dataset: %d generated %s found, %d wanted (an interrupted run?): rerun with -fresh", st.have, st.name, st.want)
		}
		svc, ok := s.Services[st.service]
		if !ok || svc.PID() == 0 {
			return have, fmt.Errorf("dataset: the %s service is not running", st.service)
		}
		fmt.Fprintf(progress, "dataset: generating %d %s ...\n", st.want, st.name)
		out, err := svc.Run(ctx, nil, st.args...)
		if err != nil {
			return have, fmt.Errorf("dataset: generating %s: %w", st.name, err)
		}
		fmt.Fprint(progress, lastLine(out))
	}
	start := time.Now()
	if err := store.Vacuum(ctx); err != nil {
		return have, fmt.Errorf("dataset: %w", err)
	}
	fmt.Fprintf(progress, "dataset: vacuumed in %s\n", time.Since(start).Round(100*time.Millisecond))
	return store.Count(ctx, convention)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func lastLine(s string) string {
	end := len(s)
	for end > 0 && s[end-1] == '\n' {
		end--
	}
	start := end
	for start > 0 && s[start-1] != '\n' {
		start--
	}
	if start == end {
		return ""
	}
	return "dataset: " + s[start:end] + "\n"
}
