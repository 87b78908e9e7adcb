package userapi_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/volunteersclient"
	"github.com/eventreg/eventreg/services/users/internal/password"
	"github.com/eventreg/eventreg/services/users/internal/role"
	"github.com/eventreg/eventreg/services/users/internal/role/roledb"
	"github.com/eventreg/eventreg/services/users/internal/user"
	"github.com/eventreg/eventreg/services/users/internal/user/userdb"
	"github.com/eventreg/eventreg/services/users/internal/userapi"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/users/search with the
// database offline (resourcetest.FuzzSearchBody).
func FuzzSearchBody(f *testing.F) {
	off := resourcetest.NewOffline(f)
	passwords, err := password.NewHasher(password.Default, 2)
	if err != nil {
		f.Fatal(err)
	}
	users := user.NewService(userdb.New(off.Pool), "2026", passwords)
	gin.SetMode(gin.TestMode)
	public, internal := gin.New(), gin.New()
	userapi.New(userapi.Deps{
		Log:        off.Log,
		Users:      users,
		Roles:      role.NewService(roledb.New(off.Pool), "2026"),
		Volunteers: volunteersclient.NewClient("http://127.0.0.1:1", 0, nil),
		Cursor:     off.Cursor,
		Protected:  func(string) []gin.HandlerFunc { return nil },
	}).Register(public, internal)
	seeds := append([]string{`{"filter": {"roleId": 2}}`, `{"filter": {"roleId": "2"}}`, `{"filter": {"roleId": "2; DROP TABLE users"}}`,
		`{"filter": {"email": "ALICE@example.org"}}`, `{"filter": {"email": "' OR 1=1 --"}}`, `{"filter": {"email": "  "}}`,
		"{\"filter\": {\"email\": \"\xff\"}}"}, resourcetest.CommonSearchSeeds...)
	resourcetest.FuzzSearchBody(f, public, "/api/v0/users/search", seeds, false)
}
