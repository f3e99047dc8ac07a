module github.com/reprompt/reprompt

go 1.26

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/sashabaranov/go-openai v1.43.0
	go.yaml.in/yaml/v3 v3.0.6
)
