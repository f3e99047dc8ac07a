// Package browsertest opens the pages of cmd/reprompt in a real
// browser: headless Chromium, driven by chromedp. It is a module of its own
// so that chromedp stays out of the module's dependencies; its tests build
// the command and the examples of the parent module. TestViewerFollows
// also imports the parent module (a replace directive points at it): it
// runs a conversation in the test process, into the SQLite file that
// "reprompt view --serve" follows, and checks that the open page shows
// each new turn without a reload. TestEvalReport opens the page of
// "reprompt eval report" and follows a failing run's chip to the check that
// failed and its step; TestEvalRunStepLinks runs "reprompt eval run" and
// follows a failed run's link to the step viewer's page of its steps.
//
// The tests skip when no Chromium is found (REPROMPT_CHROMIUM, or chromium
// on the PATH), unless REPROMPT_BROWSER_REQUIRED is set: then they fail.
//
//	cd internal/browsertest && go test ./...
//
// With REPROMPT_UPDATE=1 (never on CI) the test writes its screenshot of
// the viewer to docs/viewer.png of the parent module.
package browsertest
