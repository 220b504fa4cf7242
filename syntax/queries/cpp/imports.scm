(preproc_include) @import

; `using namespace std;`, `using std::string;`
(using_declaration) @import
