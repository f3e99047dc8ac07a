module github.com/reprompt/reprompt

go 1.26
