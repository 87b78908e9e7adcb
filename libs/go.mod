module github.com/eventreg/eventreg/libs

go 1.26.0
