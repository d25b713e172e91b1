use super::*;

fn norm(body: TokenStream) -> String {
    let block: Block = syn::parse2(body).unwrap();
    let out = normalize(&block, &parse_quote!(-> f64));
    quote!(#out).to_string()
}

#[test]
fn early_return_takes_the_rest_as_else() {
    let out = norm(quote!({
        let a = 1.0;
        if c {
            return a;
        }
        let b = a * 2.0;
        b
    }));
    assert_eq!(
        out,
        quote!({
            let a = 1.0;
            if c {
                a
            } else {
                let b = a * 2.0;
                b
            }
        })
        .to_string()
    );
}

#[test]
fn continue_and_break_become_structured() {
    let out = norm(quote!({
        for i in 0..n {
            if i == 2 {
                continue;
            }
            if i == 5 {
                break;
            }
            s += x;
        }
        s
    }));
    let expected = quote!({
        {
            let mut __adjoint_break0 = false;
            for i in 0..n {
                if i == 2 {
                } else {
                    if i == 5 {
                        __adjoint_break0 = true;
                    } else {
                        s += x;
                    };
                };
                if __adjoint_break0 {
                    break;
                }
            }
        }
        s
    });
    assert_eq!(out, expected.to_string());
}
