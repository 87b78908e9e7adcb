package dealerdb

// The queries, for the plan test.
const (
	SearchSQL       = searchSQL
	SearchUsersSQL  = searchUsersSQL
	ApplicationsSQL = applicationsSQL
)
