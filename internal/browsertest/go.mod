module github.com/reprompt/reprompt/internal/browsertest

go 1.26.0

require github.com/chromedp/chromedp v0.23.0

require (
	github.com/chromedp/cdproto v0.159.2 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)
