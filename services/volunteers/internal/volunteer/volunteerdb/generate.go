package volunteerdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/eventreg/eventreg/libs/bulkload"
)

// GenerateOptions describe synthetic volunteers for benchmarks: the range
// of users must hold at least Count ids.
type GenerateOptions struct {
	bulkload.Users
	// Departments is how many departments (ids 1..Departments) to create when
	// missing; volunteers choose among them.
	Departments int64
}

// Generate writes synthetic departments and volunteers with COPY in one
// transaction. It refuses to touch a range where the convention already has
// volunteers.
func (s *Store) Generate(ctx context.Context, o GenerateOptions) (int64, error) {
	const need = "--volunteers >= 1, --departments >= 1 and 1 <= --users-from <= --users-to"
	if o.Departments < 1 {
		return 0, errors.New("generate: need " + need)
	}
	gen := bulkload.PerUser{Table: "volunteers", Users: o.Users, Need: need, Analyze: []string{"volunteers", "departments"}}
	return bulkload.Generate(ctx, s.pool, gen, func(ctx context.Context, tx pgx.Tx, progress *bulkload.Progress) (int64, error) {
		if _, err := tx.Exec(ctx, `
		INSERT INTO departments (id, name, email, publicly_visible, leads)
		SELECT g, 'Department ' || g, 'dept' || g || '@example.org', g % 4 <> 0, ARRAY[$2 + g - 1]
		FROM generate_series(1, $1::bigint) g
		ON CONFLICT (id) DO NOTHING`, o.Departments, o.UsersFrom); err != nil {
			return 0, fmt.Errorf("departments: %w", err)
		}
		states := []string{`["experience","interest"]`, `["interest"]`, `["avoid"]`, `["assignment"]`, `["interest","request"]`}
		sizes := []string{"S", "M", "L", "XL"}
		return bulkload.Copy(ctx, tx, pgx.Identifier{"volunteers"}, []string{"convention_id", "user_id", "contact_methods", "departments", "options"}, o.Count,
			func(i int64) []any {
				userID := gen.UserID(i)
				id := strconv.FormatInt(userID, 10)
				contacts := []byte(`[{"name":"email","isPrimary":true,"value":"user` + id + `@example.org"},{"name":"discord","isPrimary":false,"value":"user` + id + `"}]`)
				d1, d2 := i%o.Departments+1, (i+7)%o.Departments+1
				deps := `[{"id":` + strconv.FormatInt(d1, 10) + `,"states":` + states[i%5] + `}`
				if d2 != d1 {
					deps += `,{"id":` + strconv.FormatInt(d2, 10) + `,"states":` + states[(i+2)%5] + `}`
				}
				options := []byte(`[{"name":"Shirt size","type":"select","value":"` + sizes[i%4] + `"},{"name":"Hours available","type":"number","value":` + strconv.FormatInt(4+i%20, 10) + `}]`)
				return []any{o.ConventionID, userID, contacts, []byte(deps + `]`), options}
			}, progress)
	})
}
