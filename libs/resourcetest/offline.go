package resourcetest

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/eventreg/eventreg/libs/page"
	"github.com/eventreg/eventreg/libs/usersclient"
)

// UserIDsSearchSeeds are the seed bodies of a search that filter.userIds
// narrows: CommonSearchSeeds and filters good and bad.
var UserIDsSearchSeeds = append([]string{`{"filter": {"userIds": ["1003", 1001]}}`, `{"filter": {"userIds": "1' OR '1'='1"}}`,
	`{"filter": {"userIds": [1.5]}}`, "{\"filter\": {\"userIds\": [\"\xff\"]}}"}, CommonSearchSeeds...)

// Users is a users service client that reaches nothing, the users source of
// an offline handler.
func (o Offline) Users() *usersclient.Client {
	return usersclient.NewClient("http://127.0.0.1:1", 0, nil)
}

// Paginator is the paginator of the search named query, with o's codec.
func (o Offline) Paginator(query string) page.Paginator {
	return page.Paginator{Codec: o.Cursor, Query: query}
}

// Router is a gin engine in test mode serving the public routes register
// adds (the internal ones go to an engine of their own, not served).
func Router(register func(public, internal gin.IRouter)) http.Handler {
	gin.SetMode(gin.TestMode)
	public := gin.New()
	register(public, gin.New())
	return public
}
