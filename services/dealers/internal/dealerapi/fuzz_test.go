package dealerapi_test

import (
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/resourcetest"
	"github.com/eventreg/eventreg/libs/usersclient"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer"
	"github.com/eventreg/eventreg/services/dealers/internal/dealer/dealerdb"
	"github.com/eventreg/eventreg/services/dealers/internal/dealerapi"
)

// FuzzSearchBody sends arbitrary bodies to POST /api/v0/dealers/search with
// the database offline (resourcetest.FuzzSearchBody): never a 500 for a
// client's mistake; an empty userIds filter is answered without the store.
func FuzzSearchBody(f *testing.F) {
	off := resourcetest.NewOffline(f)
	svc := dealer.NewService(dealerdb.New(off.Pool), usersclient.NewClient("http://127.0.0.1:1", 0, nil), "2026")
	h := dealerapi.New(svc, page.Paginator{Codec: off.Cursor, Query: "dealers.search"}, off.Log, func(string) []gin.HandlerFunc { return nil })
	gin.SetMode(gin.TestMode)
	r := gin.New()
	h.Register(r, nil)
	seeds := append([]string{`{"filter": {"userIds": ["1003", 1001]}}`, `{"filter": {"userIds": "1' OR '1'='1"}}`,
		`{"filter": {"userIds": [1.5]}}`, "{\"filter\": {\"userIds\": [\"\xff\"]}}"}, resourcetest.CommonSearchSeeds...)
	resourcetest.FuzzSearchBody(f, r, "/api/v0/dealers/search", seeds, true)
}
