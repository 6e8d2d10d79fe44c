package diagnose

// PredictPass is predictPass, for the external tests.
var PredictPass = predictPass
