module github.com/eventreg/eventreg/services/volunteers

go 1.26.0

require github.com/eventreg/eventreg/libs v0.0.0

replace github.com/eventreg/eventreg/libs => ../../libs
