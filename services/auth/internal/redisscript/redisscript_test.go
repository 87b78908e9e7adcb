package redisscript_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/eventreg/eventreg/libs/testkit"

	"github.com/eventreg/eventreg/services/auth/internal/redisscript"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type echoArgs struct {
	Name  string   `lua:"name"`
	Count int64    `lua:"count"`
	Rest  []string `lua:"rest"`
}

// echo answers its arguments by name, then a hash's fields by name.
var echo = redisscript.New[echoArgs](`
local f = fields(KEYS[1], 'b', 'a', 'missing')
local out = {name, count, tostring(#rest)}
for _, r in ipairs(rest) do table.insert(out, r) end
table.insert(out, f.a)
table.insert(out, f.b)
table.insert(out, tostring(f.missing))
return out
`)

func TestScript(t *testing.T) {
	rdb := testkit.NewRedisClient(t)
	ctx := context.Background()
	if err := rdb.HSet(ctx, "h", "a", "1", "b", "2").Err(); err != nil {
		t.Fatal(err)
	}
	t.Run("the script reads its arguments and a hash's fields by name", func(t *testing.T) {
		got, err := echo.Run(ctx, rdb, []string{"h"}, echoArgs{Name: "n", Count: 42, Rest: []string{"x", "y"}}).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"n", "42", "2", "x", "y", "1", "2", "false"}, got); d != "" {
			t.Fatalf("(-want +got):\n%s", d)
		}
	})
	t.Run("an empty list is an empty table", func(t *testing.T) {
		got, err := echo.Run(ctx, rdb, []string{"h"}, echoArgs{Name: "n"}).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if got[2] != "0" {
			t.Fatalf("the list holds %s items", got[2])
		}
	})
}

func TestNewRefusesWhatCannotBeArguments(t *testing.T) {
	for name, build := range map[string]func(){
		"not a struct":        func() { redisscript.New[string]("return 1") },
		"a field without tag": func() { redisscript.New[struct{ A string }]("return 1") },
		"a list not last": func() {
			redisscript.New[struct {
				A []string `lua:"a"`
				B string   `lua:"b"`
			}]("return 1")
		},
		"a field of another type": func() {
			redisscript.New[struct {
				A float64 `lua:"a"`
			}]("return 1")
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			build()
		})
	}
}
