module github.com/reprompt/reprompt/internal/browsertest

go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/stretchr/testify v1.11.1
)

require (
	github.com/chromedp/cdproto v0.159.2 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
