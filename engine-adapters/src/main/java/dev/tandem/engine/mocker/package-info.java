/**
 * The mocker engine: the real block pool, scheduler and events of an engine with a timing model in
 * place of compute, for router, planner and frontend work at scale without a model.
 */
package dev.tandem.engine.mocker;
