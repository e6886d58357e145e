// The worker thread of convertHubSplitOffLoop: converts one split and posts the result.
import { parentPort, workerData } from "node:worker_threads";
import { type ConvertRequest, convertHubSplit } from "./hub-dataset-convert.js";

const result = await convertHubSplit(workerData as ConvertRequest);
parentPort?.postMessage(result, result.ok ? [result.jsonl.buffer as ArrayBuffer] : []);
