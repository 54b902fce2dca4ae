export { viewSpec, type KindSpec, type ViewSpec } from './spec.js';
export { throughView, viewedExchange, ViewFilter, type ListLens } from './view.js';
