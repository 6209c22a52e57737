package llm

import (
	"context"
	"errors"
)

type responsesDialect struct{}

func newResponses(*Client, httpDoer) *responsesDialect { return &responsesDialect{} }

func (*responsesDialect) provider() string { return "openai" }
func (*responsesDialect) send(context.Context, dialectRequest) (*Response, error) {
	return nil, errors.New("not yet")
}
func (*responsesDialect) classify(error, *Error) bool { return false }
