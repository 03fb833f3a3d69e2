/**
 * The planner's algorithms, plain values in and out: predictors ({@link dev.tandem.planner.Predictor}),
 * load mode ({@link dev.tandem.planner.LoadSizer}), SLA mode from a measured
 * {@link dev.tandem.planner.Profile} ({@link dev.tandem.planner.SlaSizer}) and the
 * {@link dev.tandem.planner.Planner} that combines them under limits, grace periods and scale to
 * zero. No clock, no I/O: the live loop ({@code live}) and the simulator ({@code sim}) drive the
 * same code.
 */
package dev.tandem.planner;
