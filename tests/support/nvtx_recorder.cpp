// An NVTX injection library for the tests: it records the domain events (ranges pushed and
// popped, marks, with their registered messages, categories and payloads) into one process-wide
// log (nvtx_recorder.hpp), so that a test can check the ranges without Nsight Systems.
//
// NVTX keeps its state per executable or shared library that makes NVTX calls, and initializes
// each one's function table separately through InitializeInjectionNvtx2: every call fills the
// table it is given, and all share the log. Domains are kept by name, so that two such units
// creating "smartarray" get one handle.
#define NVTX_NO_IMPL  // the types and callback ids only: a tool implements the calls
#include <nvtx3/nvToolsExt.h>

#include "support/nvtx_recorder.hpp"

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// NVTX declares its handles as pointers to these, leaving the definitions to the tool.
struct nvtxDomainRegistration_st {
  std::string name;
  std::map<std::uint32_t, std::string> categories;
};
struct nvtxStringRegistration_st {
  std::string text;
};

namespace smartarray::test::nvtx {
namespace {

/// The log and the handles, never destroyed: NVTX calls may come during exit.
struct Log {
  std::mutex mutex;
  std::deque<nvtxDomainRegistration_st> domains;  // a deque keeps the handles' addresses
  std::deque<nvtxStringRegistration_st> strings;
  std::vector<Record> records;
  int initializations = 0;
};

Log& state() {
  static Log* const recorded = new Log;
  return *recorded;
}

std::uint64_t this_thread() { return std::hash<std::thread::id>{}(std::this_thread::get_id()); }

nvtxDomainHandle_t create_domain(const char* name) {
  Log& l = state();
  std::lock_guard lock(l.mutex);
  for (nvtxDomainRegistration_st& domain : l.domains) {
    if (domain.name == name) return &domain;
  }
  return &l.domains.emplace_back(nvtxDomainRegistration_st{name, {}});
}

void destroy_domain(nvtxDomainHandle_t) {}  // handles live as long as the process

nvtxStringHandle_t register_string(nvtxDomainHandle_t, const char* text) {
  Log& l = state();
  std::lock_guard lock(l.mutex);
  return &l.strings.emplace_back(nvtxStringRegistration_st{text});
}

void name_category(nvtxDomainHandle_t domain, std::uint32_t category, const char* name) {
  if (domain == nullptr) return;
  std::lock_guard lock(state().mutex);
  domain->categories[category] = name;
}

/// An event's record (caller holds the mutex).
Record record_of(Record::Kind kind, nvtxDomainHandle_t domain,
                 const nvtxEventAttributes_t* attributes) {
  Record record;
  record.kind = kind;
  record.thread = this_thread();
  if (domain != nullptr) record.domain = domain->name;
  if (attributes == nullptr) return record;
  if (attributes->messageType == NVTX_MESSAGE_TYPE_REGISTERED &&
      attributes->message.registered != nullptr) {
    record.message = attributes->message.registered->text;
  } else if (attributes->messageType == NVTX_MESSAGE_TYPE_ASCII &&
             attributes->message.ascii != nullptr) {
    record.message = attributes->message.ascii;
  }
  record.category = attributes->category;
  if (domain != nullptr) {
    const auto named = domain->categories.find(attributes->category);
    if (named != domain->categories.end()) record.category_name = named->second;
  }
  if (attributes->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64) {
    record.has_payload = true;
    record.payload = attributes->payload.ullValue;
  }
  return record;
}

int push_range(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  Log& l = state();
  std::lock_guard lock(l.mutex);
  l.records.push_back(record_of(Record::Kind::push, domain, attributes));
  return NVTX_NO_PUSH_POP_TRACKING;
}

int pop_range(nvtxDomainHandle_t domain) {
  Log& l = state();
  std::lock_guard lock(l.mutex);
  l.records.push_back(record_of(Record::Kind::pop, domain, nullptr));
  return NVTX_NO_PUSH_POP_TRACKING;
}

void mark(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
  Log& l = state();
  std::lock_guard lock(l.mutex);
  l.records.push_back(record_of(Record::Kind::mark, domain, attributes));
}

template <typename F>
NvtxFunctionPointer function(F* f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

std::vector<Record> records() {
  std::lock_guard lock(state().mutex);
  return state().records;
}

int initializations() {
  std::lock_guard lock(state().mutex);
  return state().initializations;
}

std::vector<std::string> domains() {
  std::lock_guard lock(state().mutex);
  std::vector<std::string> names;
  for (const nvtxDomainRegistration_st& domain : state().domains) names.push_back(domain.name);
  return names;
}

}  // namespace smartarray::test::nvtx

/// NVTX's entry point: fills the domain calls of the unit that asks (NVTX_CB_MODULE_CORE2).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  namespace rec = smartarray::test::nvtx;
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0 ||
      table == nullptr) {
    return 0;
  }
  const std::pair<unsigned, NvtxFunctionPointer> calls[] = {
      {NVTX_CBID_CORE2_DomainCreateA, rec::function(&rec::create_domain)},
      {NVTX_CBID_CORE2_DomainDestroy, rec::function(&rec::destroy_domain)},
      {NVTX_CBID_CORE2_DomainRegisterStringA, rec::function(&rec::register_string)},
      {NVTX_CBID_CORE2_DomainNameCategoryA, rec::function(&rec::name_category)},
      {NVTX_CBID_CORE2_DomainRangePushEx, rec::function(&rec::push_range)},
      {NVTX_CBID_CORE2_DomainRangePop, rec::function(&rec::pop_range)},
      {NVTX_CBID_CORE2_DomainMarkEx, rec::function(&rec::mark)},
  };
  for (const auto& [id, call] : calls) {
    if (id < size && table[id] != nullptr) *table[id] = call;
  }
  std::lock_guard lock(rec::state().mutex);
  ++rec::state().initializations;
  return 1;
}
