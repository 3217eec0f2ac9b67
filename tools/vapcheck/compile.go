package main

// What creating a policy would refuse: every CEL expression compiled as the API server's validation of a
// ValidatingAdmissionPolicy compiles it (k8s.io/kubernetes pkg/apis/admissionregistration/validation/validation.go,
// validateValidatingAdmissionPolicySpec and the validate* functions it calls):
//   - variables, in order, with a composited compiler that stores each (CompileAndStoreVariable), so that later
//     variables, validations, messageExpressions and auditAnnotations see `variables.<name>`;
//   - matchConditions with a stateless compiler (no `variables`), params allowed when the policy has a paramKind;
//   - validations (bool) and auditAnnotations' valueExpression (string or null) with the authorizer declared;
//   - messageExpressions (string) without the authorizer.
// All over the base environment at environment.DefaultCompatibilityVersion() (the binary's minor less one), with
// strict cost (baseEnvSet, apiserver.go), and as new expressions (environment.NewExpressions): a policy being created
// has no pre-existing expressions.

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

type compileError struct {
	Policy string `json:"policy"`
	Error  string `json:"error"`
}

// celFieldError mirrors convertCELErrorToValidationError of validation.go.
func celFieldError(path *field.Path, expression string, err error) string {
	if celErr, ok := err.(*apiservercel.Error); ok {
		switch celErr.Type {
		case apiservercel.ErrorTypeRequired:
			return field.Required(path, celErr.Detail).Error()
		case apiservercel.ErrorTypeInvalid:
			return field.Invalid(path, expression, celErr.Detail).Error()
		case apiservercel.ErrorTypeInternal:
			return field.InternalError(path, celErr).Error()
		}
	}
	return field.InternalError(path, fmt.Errorf("unsupported error type: %w", err)).Error()
}

func compilePolicyExpressions(policy *admissionregistrationv1.ValidatingAdmissionPolicy) []compileError {
	var out []compileError
	add := func(msg string) { out = append(out, compileError{Policy: policy.Name, Error: msg}) }
	spec := &policy.Spec
	hasParams := spec.ParamKind != nil
	env := environment.NewExpressions

	// validation.go createCompiler: a composited compiler when the policy has variables, else a stateless one.
	var compiler plugincel.Compiler
	if len(spec.Variables) > 0 {
		composited, err := plugincel.NewCompositedCompiler(baseEnvSet())
		if err != nil {
			add(fmt.Sprintf("spec: internal error building the CEL compiler: %v", err))
			return out
		}
		for i, v := range spec.Variables {
			path := field.NewPath("spec", "variables").Index(i).Child("expression")
			if strings.TrimSpace(v.Expression) == "" {
				add(field.Required(path, "expression is not specified").Error())
				continue
			}
			variable := &validating.Variable{Name: v.Name, Expression: v.Expression}
			result := composited.CompileAndStoreVariable(variable, declarations(hasParams, true), env)
			if result.Error != nil {
				add(celFieldError(path, v.Expression, result.Error))
			}
		}
		compiler = composited
	} else {
		compiler = plugincel.NewCompiler(baseEnvSet())
	}

	stateless := plugincel.NewCompiler(baseEnvSet())
	for i, c := range spec.MatchConditions {
		path := field.NewPath("spec", "matchConditions").Index(i).Child("expression")
		expression := strings.TrimSpace(c.Expression)
		if expression == "" {
			add(field.Required(path, "").Error())
			continue
		}
		result := stateless.CompileCELExpression(&matchconditions.MatchCondition{Expression: expression},
			declarations(hasParams, true), env)
		if result.Error != nil {
			add(celFieldError(path, expression, result.Error))
		}
	}

	for i, v := range spec.Validations {
		path := field.NewPath("spec", "validations").Index(i)
		if strings.TrimSpace(v.Expression) == "" {
			add(field.Required(path.Child("expression"), "expression is not specified").Error())
		} else {
			result := compiler.CompileCELExpression(&validating.ValidationCondition{Expression: v.Expression},
				declarations(hasParams, true), env)
			if result.Error != nil {
				add(celFieldError(path.Child("expression"), v.Expression, result.Error))
			}
		}
		if strings.TrimSpace(v.MessageExpression) != "" {
			result := compiler.CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
				declarations(hasParams, false), env)
			if result.Error != nil {
				add(celFieldError(path.Child("messageExpression"), v.MessageExpression, result.Error))
			}
		} else if v.MessageExpression != "" {
			add(field.Invalid(path.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified").Error())
		}
	}

	for i, a := range spec.AuditAnnotations {
		path := field.NewPath("spec", "auditAnnotations").Index(i).Child("valueExpression")
		if strings.TrimSpace(a.ValueExpression) == "" {
			add(field.Required(path, "valueExpression is not specified").Error())
			continue
		}
		result := compiler.CompileCELExpression(&validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression},
			declarations(hasParams, true), env)
		if result.Error != nil {
			add(celFieldError(path, a.ValueExpression, result.Error))
		}
	}
	return out
}
